"""The Helm chart and the plain manifests, without a cluster or helm.

`deploy/manifests/phalanx.yaml` is `helm template` of the chart with its defaults (an integration
test renders it again with helm and compares), so checks of the rendered objects read it here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from phalanx.config import OperatorConfig
from phalanx.devcluster.chart import CHART, CRDS, MANIFESTS, NAMESPACE, crd_copies
from phalanx.k8s.metrics import Metrics

REPO = Path(__file__).resolve().parents[3]

OPERATOR_RULES = {
    # (apiGroup, resource): verbs; README.md "Install" says what each one is for.
    ("", "nodes"): {"list", "watch"},
    ("", "pods"): {"get", "list", "watch", "create", "delete"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "pods/eviction"): {"create"},
    ("", "events"): {"create"},
    ("", "namespaces"): {"list", "watch"},
    ("phalanx.dev", "podgroups"): {"list", "watch", "create", "delete"},
    ("phalanx.dev", "queues"): {"list", "watch"},
    ("phalanx.dev", "podgroups/status"): {"patch"},
    ("phalanx.dev", "queues/status"): {"patch"},
    ("batch", "jobs"): {"list", "watch", "patch"},
    # Workloads whose pods are ganged automatically (core.autogang): read from watches.
    ("jobset.x-k8s.io", "jobsets"): {"list", "watch", "patch"},
    ("leaderworkerset.x-k8s.io", "leaderworkersets"): {"list", "watch"},
    ("kubeflow.org", "pytorchjobs"): {"list", "watch", "patch"},
    ("kubeflow.org", "mpijobs"): {"list", "watch", "patch"},
    ("trainer.kubeflow.org", "trainjobs"): {"list", "watch", "patch"},
    ("ray.io", "rayclusters"): {"list", "watch", "patch"},
    ("ray.io", "rayjobs"): {"list", "watch", "patch"},
    ("scheduling.k8s.io", "priorityclasses"): {"list", "watch"},
    # Native PodGroups (Kubernetes 1.36 gang API) as input, their conditions as output.
    ("scheduling.k8s.io", "podgroups"): {"list", "watch"},
    ("scheduling.k8s.io", "podgroups/status"): {"patch"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
}
USER_ROLES = {
    # name: (the built-in role it is aggregated into, {(apiGroup, resource): verbs})
    "phalanx-podgroup-editor": (
        "edit",
        {
            ("phalanx.dev", "podgroups"): {
                "get", "list", "watch", "create", "update", "patch", "delete"
            },
        },
    ),
    "phalanx-viewer": (
        "view",
        {
            ("phalanx.dev", "podgroups"): {"get", "list", "watch"},
            ("phalanx.dev", "queues"): {"get", "list", "watch"},
        },
    ),
}  # fmt: skip
LEASE_RULES = {
    ("coordination.k8s.io", "leases", None): {"create"},
    ("coordination.k8s.io", "leases", "phalanx-scheduler"): {"get", "update"},
}
SECTION_6_METRICS = {
    "phalanx_scheduling_cycle_seconds",
    "phalanx_gang_wait_seconds",
    "phalanx_gang_partial_bound_seconds",
    "phalanx_binds_total",
    "phalanx_evictions_total",
    "phalanx_queue_deserved",
    "phalanx_queue_allocated",
    "phalanx_queue_pending_gangs",
    "phalanx_gpus",
    "phalanx_gang_leaves_spanned",
}


def manifests() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d]


def one(kind: str) -> dict[str, Any]:
    """The one object of `kind` (ClusterRole: the operator's, not the users' roles)."""
    found = [
        d
        for d in manifests()
        if d["kind"] == kind and not (kind == "ClusterRole" and d["metadata"]["name"] in USER_ROLES)
    ]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def granted_rules(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def rbac_rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for d in docs if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]


def assert_least_privilege(docs: list[dict[str, Any]]) -> None:
    """No wildcard anywhere in a rule and nothing about Secrets (shared with the helm tests)."""
    rules = rbac_rules(docs)
    assert rules, "no ClusterRole or Role rendered"
    for rule in rules:
        for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
            for item in rule.get(field) or []:
                assert "*" not in item, f"wildcard in {field}: {rule}"
        assert not any(r.split("/")[0] == "secrets" for r in rule.get("resources", [])), rule
        assert "nonResourceURLs" not in rule, rule


def test_chart_crds_are_byte_identical_copies_of_crds() -> None:
    sources = sorted(p.name for p in CRDS.glob("*.yaml"))
    copies = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert sources and copies == sources, "run `make sync-chart`"
    for src, dst in crd_copies().items():
        assert dst.read_bytes() == src.read_bytes(), f"{dst} differs from {src}: make sync-chart"


def test_the_roles_have_no_wildcard_and_no_access_to_secrets() -> None:
    assert_least_privilege(manifests())


def test_the_cluster_role_is_exactly_what_the_operator_uses() -> None:
    assert granted_rules(one("ClusterRole")) == OPERATOR_RULES


def test_the_user_roles_are_aggregated_and_exactly_their_rules() -> None:
    """PRODUCT.md §6: PodGroups for whoever may edit a namespace (never their status, which is
    the operator's), PodGroups and Queues read-only for whoever may view it."""
    roles = {
        d["metadata"]["name"]: d
        for d in manifests()
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] in USER_ROLES
    }
    assert set(roles) == set(USER_ROLES)
    for name, (builtin, rules) in USER_ROLES.items():
        labels = roles[name]["metadata"]["labels"]
        aggregate = {k: v for k, v in labels.items() if k.startswith("rbac.authorization.k8s.io/")}
        assert aggregate == {f"rbac.authorization.k8s.io/aggregate-to-{builtin}": "true"}, name
        assert granted_rules(roles[name]) == rules, name
        assert "aggregationRule" not in roles[name]
    # On by default (helm renders none with rbac.userRoles=false: tests/integration/test_helm.py).
    assert yaml.safe_load((CHART / "values.yaml").read_text())["rbac"]["userRoles"] is True
    # No binding names them: the built-in roles carry them to whoever has edit or view.
    bindings = [d for d in manifests() if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    bound = {d["roleRef"]["name"] for d in bindings}
    assert not bound & set(USER_ROLES)


def test_the_lease_role_allows_one_lease_in_the_release_namespace() -> None:
    role = one("Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    granted: dict[tuple[str, str, str | None], set[str]] = {}
    for rule in role["rules"]:
        for name in rule.get("resourceNames") or [None]:
            for resource in rule["resources"]:
                key = (rule["apiGroups"][0], resource, name)
                granted.setdefault(key, set()).update(rule["verbs"])
    assert granted == LEASE_RULES


def test_the_bindings_name_the_chart_service_account() -> None:
    sa = one("ServiceAccount")["metadata"]
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = one(kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": one(role_kind)["metadata"]["name"],
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
        ]
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["name"]


def test_the_deployment_is_two_hardened_replicas_with_probes_and_resources() -> None:
    deploy = one("Deployment")
    assert deploy["metadata"]["namespace"] == NAMESPACE
    assert deploy["spec"]["replicas"] == 2
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert set(container["resources"]) == {"requests", "limits"}
    for part in ("requests", "limits"):
        assert set(container["resources"][part]) == {"cpu", "memory"}
    env = {e["name"]: e["value"] for e in container["env"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": int(env["PHALANX_METRICS_PORT"]), "health": 8081}
    assert int(env["PHALANX_HEALTH_PORT"]) == ports["health"]
    for probe in ("livenessProbe", "readinessProbe"):
        # kopf serves its liveness endpoint at the path of the URL it is given: /healthz.
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    # The image's entrypoint is `phalanx run` (Dockerfile): no arguments by default.
    assert "args" not in container and "command" not in container
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["phalanx", "run"]' in dockerfile
    assert re.search(r"^USER 10001:10001$", dockerfile, re.M)
    assert env["PHALANX_LEADER_ELECTION"] == "true"
    assert env["PHALANX_LEASE_NAMESPACE"] == NAMESPACE
    # A writable /tmp for the read-only root filesystem.
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_the_deployment_env_is_read_by_phalanx_run_into_the_chart_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every PHALANX_* variable the chart sets is a `phalanx run` option, and together they
    make a valid configuration with the values' defaults (parsed by the real command)."""
    from phalanx import cli
    from phalanx.k8s import operator

    container = one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if e["name"].startswith("PHALANX_")}
    run = typer.main.get_command(cli.app).commands["run"]  # type: ignore[attr-defined]
    known = {p.envvar for p in run.params if p.envvar}
    assert set(env) <= known, f"not `phalanx run` options: {set(env) - known}"
    # Every setting of PRODUCT.md §5 comes from the chart (only the kubeconfig does not; the
    # `verbose` value is passed as the --verbose argument).
    assert known - set(env) == {"KUBECONFIG", "PHALANX_VERBOSE"}
    captured: list[OperatorConfig] = []

    async def fake_run(cfg: OperatorConfig, kubeconfig: str | None = None) -> None:
        captured.append(cfg)

    monkeypatch.setattr(operator, "run_operator", fake_run)
    for name in list(env):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli.app, ["run"], env=env)
    assert result.exit_code == 0, result.output
    (cfg,) = captured
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    sched, lease = values["scheduler"], values["leaderElection"]
    assert cfg.topology_levels == tuple((lv["name"], lv["label"]) for lv in sched["topologyLevels"])
    assert cfg.scheduler_name == sched["name"] == "phalanx"
    assert cfg.namespaces == ()
    assert cfg.backfill is sched["backfill"]["enabled"] is True
    assert cfg.backfill_depth == sched["backfill"]["depth"]
    assert (cfg.reclaim, cfg.preemption) == (sched["reclaim"], sched["preemption"])
    assert cfg.bind_concurrency == sched["bind"]["concurrency"]
    assert cfg.bind_deadline_s == sched["bind"]["deadlineSeconds"]
    assert cfg.cycle_interval_s == sched["cycleIntervalSeconds"]
    assert cfg.usage_half_life_s == sched["usageHalfLifeSeconds"]
    assert cfg.leader_election is True
    assert (cfg.lease_name, cfg.lease_namespace) == (lease["leaseName"], NAMESPACE)
    assert cfg.lease_duration_s == lease["leaseDurationSeconds"]
    assert cfg.renew_deadline_s == lease["renewDeadlineSeconds"]
    assert cfg.retry_period_s == lease["retryPeriodSeconds"]


def test_the_manifests_carry_the_namespace_the_service_and_the_default_queue() -> None:
    kinds = [d["kind"] for d in manifests()]
    assert kinds[0] == "Namespace", "the Namespace must be applied first"
    assert one("Namespace")["metadata"]["name"] == NAMESPACE
    svc = one("Service")
    assert svc["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]
    queue = one("Queue")
    assert queue["apiVersion"] == "phalanx.dev/v1alpha1"
    assert queue["metadata"]["name"] == "default"
    assert "ServiceMonitor" not in kinds and "ConfigMap" not in kinds  # both off by default


def test_the_dashboard_shows_the_operator_metrics() -> None:
    dashboard = json.loads((CHART / "dashboards" / "phalanx.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = {
        re.sub(r"_(bucket|count|sum)$", "", m) for e in exprs for m in re.findall(r"phalanx_\w+", e)
    }
    served = {m.name for m in Metrics().registry.collect()}
    # prometheus_client reports counters without their _total suffix.
    served |= {f"{n}_total" for n in served}
    assert used <= served, (
        f"the dashboard queries metrics the operator does not serve: {used - served}"
    )
    assert used >= SECTION_6_METRICS, f"not on the dashboard: {SECTION_6_METRICS - used}"
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("queue", "pending", "wait", "gpu", "leaves"):
        assert topic in titles, f"no panel about {topic}"


def undocumented_values(text: str) -> list[str]:
    """Values with no comment right above them nor above an enclosing key (list items are
    data, documented by their key)."""
    lines = text.splitlines()
    stack: list[tuple[int, bool]] = []  # (indent, commented) of the enclosing keys
    list_indent: int | None = None
    missing = []
    for i, line in enumerate(lines):
        item = re.match(r"^( *)- ", line)
        if item:
            list_indent = len(item.group(1))
            continue
        m = re.match(r"^( *)([A-Za-z][\w.-]*):(.*)$", line)
        if not m:
            continue
        indent = len(m.group(1))
        if list_indent is not None and indent > list_indent:
            continue
        list_indent = None
        while stack and stack[-1][0] >= indent:
            stack.pop()
        commented = i > 0 and lines[i - 1].lstrip().startswith("#")
        if m.group(3).strip() and not commented and not any(c for _, c in stack):
            missing.append(line.strip())
        stack.append((indent, commented))
    return missing


def test_every_value_is_commented() -> None:
    assert not undocumented_values((CHART / "values.yaml").read_text())
    # The check itself finds what it should.
    sample = "# a\na: 1\nb:\n  # c\n  c: 2\n  d: 3\n# e\ne:\n  f: 4\nl:\n  - x: 1\n    y: 2\n"
    assert undocumented_values(sample) == ["d: 3"]


def test_the_chart_image_is_the_published_one_at_the_app_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    pyproject = (REPO / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M)
    assert version and chart["appVersion"] == version.group(1)
    container = one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"ghcr.io/phalanx-sched/phalanx:{chart['appVersion']}"
