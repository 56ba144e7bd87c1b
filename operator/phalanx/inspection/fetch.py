"""The Kubernetes reads behind the views, with the user's kubeconfig (as kubectl finds it).

The kubeconfig is `--kubeconfig`, else `KUBECONFIG` (a list of paths, merged), else
`~/.kube/config`; inside a pod without one, the in-cluster service account. The default namespace
is the one of the kubeconfig's current context, else `default` — like kubectl. Every failure a
user can cause becomes a `ViewError` with one line that says what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.inspection.errors import PodGroupNotFound, ViewError

GROUP, VERSION = "phalanx.dev", "v1alpha1"
TIMEOUT = (5, 30)  # connect, read (seconds): a view must not hang on a dead API server
SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
NOT_INSTALLED = (
    f"the {GROUP}/{VERSION} API is not served by this cluster: are the Phalanx CRDs installed? "
    "(kubectl apply -f crds/)"
)


def kubeconfig_paths(explicit: str | None) -> list[Path]:
    raw = explicit or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p]


@dataclass
class Reader:
    """Reads PodGroups and Queues through one API client."""

    api_client: Any
    namespace: str
    server: str

    # -- connecting ---------------------------------------------------------------------------

    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None) -> Reader:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        paths = kubeconfig_paths(kubeconfig)
        existing = [p for p in paths if p.is_file()]
        if not existing:
            if os.environ.get("KUBERNETES_SERVICE_HOST") and not kubeconfig:
                return cls._in_cluster()
            where = ", ".join(str(p) for p in paths) or "(empty)"
            raise ViewError(
                f"no kubeconfig: {where} does not exist; set KUBECONFIG or pass --kubeconfig"
            )
        config_file = os.pathsep.join(str(p) for p in existing)
        try:
            contexts, current = config.list_kube_config_contexts(config_file=config_file)  # type: ignore[no-untyped-call]
            chosen = current
            if context is not None:
                chosen = next((c for c in contexts if c.get("name") == context), None)
                if chosen is None:
                    raise ViewError(f"context {context!r} not found in the kubeconfig")
            configuration = client.Configuration()
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=config_file,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except ConfigException as exc:
            raise ViewError(f"bad kubeconfig {config_file}: {exc}") from exc
        namespace = str(((chosen or {}).get("context") or {}).get("namespace") or "default")
        return cls(client.ApiClient(configuration), namespace, str(configuration.host))

    @classmethod
    def _in_cluster(cls) -> Reader:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise ViewError(f"no kubeconfig, and no in-cluster service account: {exc}") from exc
        try:
            namespace = SA_NAMESPACE.read_text().strip() or "default"
        except OSError:
            namespace = "default"
        return cls(client.ApiClient(configuration), namespace, str(configuration.host))

    # -- reads ----------------------------------------------------------------------------------

    def _custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    def _call(self, what: str, fn: Any, *args: Any) -> dict[str, Any]:
        """One API call; API and connection failures become `ViewError`s."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            out: dict[str, Any] = fn(*args, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status in (401, 403):
                raise ViewError(
                    f"{'forbidden' if exc.status == 403 else 'unauthorized'}: cannot {what} "
                    f"({_api_message(exc)})"
                ) from exc
            raise
        except HTTPError as exc:
            raise ViewError(
                f"cannot reach the API server at {self.server}: {_reason(exc)}"
            ) from exc
        return out

    def _list(self, what: str, fn: Any, *args: Any) -> list[dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException

        try:
            body = self._call(what, fn, *args)
        except ApiException as exc:
            if exc.status == 404:
                raise ViewError(NOT_INSTALLED) from exc
            raise ViewError(f"cannot {what}: {_api_message(exc)}") from exc
        items = body.get("items") or []
        return [i for i in items if isinstance(i, dict)]

    def podgroups(self, namespace: str | None) -> list[dict[str, Any]]:
        """PodGroups of one namespace, or of all (`None`)."""
        custom = self._custom()
        if namespace is None:
            return self._list(
                "list PodGroups in all namespaces",
                custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                "podgroups",
            )
        return self._list(
            f"list PodGroups in namespace {namespace}",
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            "podgroups",
        )

    def queues(self) -> list[dict[str, Any]]:
        custom = self._custom()
        return self._list(
            "list Queues", custom.list_cluster_custom_object, GROUP, VERSION, "queues"
        )

    def events(self, namespace: str, uid: str) -> list[dict[str, Any]]:
        """The Events about the object of `uid` (what `kubectl describe` lists at its end)."""
        import json

        from kubernetes import client

        core = client.CoreV1Api(self.api_client)

        def listed(namespace: str, **kw: Any) -> dict[str, Any]:
            raw: Any = core.list_namespaced_event(  # the raw response: its JSON, not models
                namespace, field_selector=f"involvedObject.uid={uid}", _preload_content=False, **kw
            )
            body: dict[str, Any] = json.loads(raw.data)
            return body

        return self._list(f"list Events in namespace {namespace}", listed, namespace)

    def pods_naming(self, namespace: str, group: str) -> list[dict[str, Any]]:
        """The pods of `namespace` labelled as members of PodGroup `group`."""
        import json

        from kubernetes import client

        core = client.CoreV1Api(self.api_client)

        def listed(namespace: str, **kw: Any) -> dict[str, Any]:
            raw: Any = core.list_namespaced_pod(  # the raw response: its JSON, not models
                namespace,
                label_selector=f"phalanx.dev/pod-group={group}",
                _preload_content=False,
                **kw,
            )
            body: dict[str, Any] = json.loads(raw.data)
            return body

        return self._list(f"list Pods in namespace {namespace}", listed, namespace)

    def pending_pods(self, namespace: str | None) -> list[dict[str, Any]]:
        """Pods not yet bound (phase `Pending`) of one namespace, or of all (`None`)."""
        import json

        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        selector = "status.phase=Pending"

        def in_all(**kw: Any) -> dict[str, Any]:
            raw: Any = core.list_pod_for_all_namespaces(
                field_selector=selector, _preload_content=False, **kw
            )
            body: dict[str, Any] = json.loads(raw.data)
            return body

        def in_one(namespace: str, **kw: Any) -> dict[str, Any]:
            raw: Any = core.list_namespaced_pod(
                namespace, field_selector=selector, _preload_content=False, **kw
            )
            body: dict[str, Any] = json.loads(raw.data)
            return body

        if namespace is None:
            return self._list("list Pods in all namespaces", in_all)
        return self._list(f"list Pods in namespace {namespace}", in_one, namespace)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod `namespace/name`, or None when there is none (`explain` given a pod's name)."""
        import json

        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.api_client)

        def read(name: str, namespace: str, **kw: Any) -> dict[str, Any]:
            raw: Any = core.read_namespaced_pod(name, namespace, _preload_content=False, **kw)
            body: dict[str, Any] = json.loads(raw.data)
            return body

        try:
            return self._call(f"get Pod {namespace}/{name}", read, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise ViewError(f"cannot get Pod {namespace}/{name}: {_api_message(exc)}") from exc

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The namespace's labels, or None when the user may not read it (`view` does not let
        one read Namespaces) or it cannot be read."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.api_client)
        try:
            ns = self._call(
                f"get Namespace {namespace}",
                lambda name, **kw: core.read_namespace(name, **kw).to_dict(),
                namespace,
            )
        except (ViewError, ApiException):
            return None
        labels = (ns.get("metadata") or {}).get("labels") or {}
        return {str(k): str(v) for k, v in labels.items()}

    def podgroup(self, namespace: str, name: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        custom = self._custom()
        try:
            return self._call(
                f"get PodGroup {namespace}/{name}",
                custom.get_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                "podgroups",
                name,
            )
        except ApiException as exc:
            if exc.status != 404:
                msg = f"cannot get PodGroup {namespace}/{name}: {_api_message(exc)}"
                raise ViewError(msg) from exc
        # A 404 means no such PodGroup — or no such API at all: the list tells them apart.
        self.podgroups(namespace)
        raise PodGroupNotFound(namespace, name)


def _api_message(exc: Any) -> str:
    """The `message` of a Kubernetes Status body, else the HTTP reason."""
    import json

    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {exc.status} {exc.reason}".strip()


def _reason(exc: Exception) -> str:
    inner = getattr(exc, "reason", None)
    text = str(inner or exc)
    # urllib3 wraps the socket error in layers of repr; the last part is the useful one.
    return text.rsplit(": ", 1)[-1].strip("')\"") or text
