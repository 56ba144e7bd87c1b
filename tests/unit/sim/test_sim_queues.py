"""Queue specs: Philly VC derivation, the default queue, and the YAML queue file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.sim.queues import (
    GPU,
    QueueFileError,
    QueueSpec,
    load_queue_file,
    parse_quantity,
    philly_queues,
    proportional_guarantees,
    queue_of,
    queues_for_trace,
    single_queue,
)
from phalanx.sim.traces import Trace, TraceJob


class TestPhillyDerivation:
    def test_guarantees_follow_node_counts_scaled_to_the_cluster(self) -> None:
        # 64:32:32 nodes (1024 GPUs in Philly) on a 128-GPU shape: 64, 32, 32.
        queues = philly_queues({"a": 64, "b": 32, "c": 32}, ["a", "c", "zz", "tiny"], 128)
        assert [(q.name, q.weight, q.guarantee) for q in queues] == [
            ("a", 64, {GPU: 64}),
            ("b", 32, {GPU: 32}),  # no jobs: still a queue, its guarantee lent out
            ("c", 32, {GPU: 32}),
            ("tiny", 1, {}),  # not in philly_vc.csv: weight 1, no guarantee, sorted by name
            ("zz", 1, {}),
        ]

    def test_largest_remainder_rounding_sums_to_the_cluster(self) -> None:
        # 100 GPUs over 1:1:1 -> 33.33 each; the leftover GPU goes to the first name.
        assert proportional_guarantees({"b": 1, "a": 1, "c": 1}, 100) == {"a": 34, "b": 33, "c": 33}
        # 512 x 8/352 = 11.6 -> 12 for both 8-node VCs in the real table.
        sizes = {"6214e9": 64, "ed69ec": 8, "103959": 8, "rest": 272}
        assert proportional_guarantees(sizes, 512) == {
            "6214e9": 93, "ed69ec": 12, "103959": 12, "rest": 395
        }  # fmt: skip

    @given(
        st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers(1, 100), min_size=1),
        st.integers(0, 10_000),
    )
    def test_guarantees_never_exceed_the_cluster(self, sizes: dict[str, int], total: int) -> None:
        out = proportional_guarantees(sizes, total)
        assert sum(out.values()) == total
        whole = sum(sizes.values())
        assert all(abs(out[n] - total * s / whole) < 1 for n, s in sizes.items())

    def test_queues_for_trace(self, tmp_path: Path) -> None:
        (tmp_path / "philly_vc.csv").write_text("vc,node num\nv1,3\nv2,1\n")
        jobs = [TraceJob("philly-2", 0.0, 1, 5.0, tenant="v9")]
        trace = Trace(kind="philly", source=tmp_path / "philly.csv", jobs=jobs)
        queues = queues_for_trace(trace, 64)
        assert [(q.name, q.guaranteed_gpus) for q in queues] == [("v1", 48), ("v2", 16), ("v9", 0)]
        assert queue_of(jobs[0]) == "v9"
        itp = Trace(kind="itp", source=tmp_path / "c.csv", jobs=[TraceJob("x", 0.0, 1, 1.0)])
        assert queues_for_trace(itp, 64) == single_queue() == [QueueSpec(name="default")]
        assert queue_of(itp.jobs[0]) == "default"


@pytest.mark.parametrize(
    ("text", "value"),
    [(8, 8.0), (0.5, 0.5), ("64", 64.0), ("500m", 0.5), ("1Gi", 2.0**30), ("2k", 2000.0),
     ("1e3", 1000.0), (".5", 0.5)],
)  # fmt: skip
def test_quantities(text: object, value: float) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["lots", "1GB", True, None, "inf"])
def test_bad_quantities(bad: object) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(bad)


class TestQueueFile:
    def write(self, tmp_path: Path, text: str) -> Path:
        path = tmp_path / "queues.yaml"
        path.write_text(text)
        return path

    def test_flat_list_with_every_field(self, tmp_path: Path) -> None:
        path = self.write(
            tmp_path,
            """
- name: team-a
  weight: 3
  guarantee: {nvidia.com/gpu: 64, cpu: 500m, memory: 1Ti}
  limit: {nvidia.com/gpu: 128}
  reclaimable: false
  namespaces: [ml-a, ml-b]
  priority: 10
  defaultTimeLimitSeconds: 3600
  maxTimeLimitSeconds: 86400
- name: default
""",
        )
        a, default = load_queue_file(path)
        assert a == QueueSpec(
            name="team-a",
            weight=3,
            guarantee={GPU: 64, "cpu": 0.5, "memory": 2.0**40},
            limit={GPU: 128},
            reclaimable=False,
            namespaces=("ml-a", "ml-b"),
            priority=10,
            default_time_limit_seconds=3600,
            max_time_limit_seconds=86400,
        )
        assert default == QueueSpec(name="default")
        assert (default.weight, default.reclaimable, default.limit, default.guaranteed_gpus) == (
            1, True, None, 0.0
        )  # fmt: skip

    def test_queue_objects_in_a_multi_document_stream(self, tmp_path: Path) -> None:
        path = self.write(
            tmp_path,
            """apiVersion: phalanx.dev/v1alpha1
kind: Queue
metadata: {name: research}
spec: {weight: 2, guarantee: {nvidia.com/gpu: 16}}
---
apiVersion: phalanx.dev/v1alpha1
kind: Queue
metadata: {name: prod}
""",
        )
        assert [(q.name, q.weight, q.guaranteed_gpus) for q in load_queue_file(path)] == [
            ("research", 2, 16.0),
            ("prod", 1, 0.0),
        ]

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("- name: a\n  weight: 0\n", "queue 1 (a): weight: Input should be greater than or"),
            ("- name: a\n- name: B_x\n", "queue 2 (B_x): name: 'B_x' is not a valid Kubernetes"),
            ("- name: a\n  wieght: 2\n", "queue 1 (a): wieght: Extra inputs are not permitted"),
            ("- name: a\n  weight: '2'\n", "queue 1 (a): weight: Input should be a valid int"),
            ("- name: a\n  guarantee: {nvidia.com/gpu: -1}\n", "nvidia.com/gpu: must be non-neg"),
            ("- name: a\n  guarantee: {cpu: lots}\n", "not a quantity: 'lots'"),
            (
                "- name: a\n  guarantee: {nvidia.com/gpu: 8}\n  limit: {nvidia.com/gpu: 4}\n",
                "limit nvidia.com/gpu=4 is below its guarantee 8",
            ),
            (
                "- name: a\n  defaultTimeLimitSeconds: 7200\n  maxTimeLimitSeconds: 3600\n",
                "defaultTimeLimitSeconds 7200 exceeds maxTimeLimitSeconds 3600",
            ),
            ("- name: a\n  maxTimeLimitSeconds: 0\n", "maxTimeLimitSeconds: Input should be gre"),
            ("- name: a\n- name: a\n", "queue 2 (a): duplicate queue name 'a'"),
            ("- weight: 2\n", "queue 1: name: Field required"),
            ("- just-a-string\n", "queue 1: expected a mapping, got str"),
            ("kind: PodGroup\nmetadata: {name: a}\n", "kind is 'PodGroup', expected Queue"),
            ("", "no queues"),
            ("- name: a\n  weight: [1\n", "invalid YAML"),
        ],
    )
    def test_errors_are_one_line_naming_file_queue_and_field(
        self, tmp_path: Path, text: str, message: str
    ) -> None:
        path = self.write(tmp_path, text)
        with pytest.raises(QueueFileError) as error:
            load_queue_file(path)
        assert str(error.value).startswith(f"{path}")
        assert message in str(error.value)
        assert "\n" not in str(error.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(QueueFileError, match="cannot read"):
            load_queue_file(tmp_path / "nope.yaml")
