"""Trace loaders on small hand-made files in the real formats (header and quirks copied)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.sim.traces import (
    TraceFormatError,
    load_itp,
    load_openb_nodes,
    load_openb_pods,
    load_philly,
    load_philly_vc_sizes,
    load_trace,
    pod_gpu_split,
)

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ITP_HEADER = "job_id,submission_time,duration,num_gpu\n"
OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("gpus", "pods"),
    [(0, [0]), (1, [1]), (7, [7]), (8, [8]), (9, [8, 1]), (12, [8, 4]), (16, [8, 8]),
     (24, [8, 8, 8]), (64, [8] * 8), (130, [8] * 16 + [2])],
)  # fmt: skip
def test_pod_split_is_full_nodes_then_one_remainder(gpus: int, pods: list[int]) -> None:
    assert pod_gpu_split(gpus) == pods
    assert sum(pods) == gpus


def test_pod_split_refuses_negative() -> None:
    with pytest.raises(ValueError, match="-1"):
        pod_gpu_split(-1)


class TestPhilly:
    def test_unsorted_rows_are_sorted_and_rebased_to_the_earliest(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "philly.csv",
            PHILLY_HEADER
            + "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
            + "2017-10-09 06:13:03,2951.0,16,47216.0,6214e9\n"
            + "2017-10-09 07:01:55,10.0,2,20.0,6214e9\n",
        )
        trace = load_philly(path)
        assert trace.kind == "philly"
        assert [(j.id, j.submit_s, j.gpus, j.duration_s, j.tenant) for j in trace.jobs] == [
            ("philly-3", 0.0, 16, 2951.0, "6214e9"),
            ("philly-2", 2932.0, 1, 66.0, "11cb48"),  # tie at 07:01:55 kept in file order
            ("philly-4", 2932.0, 2, 10.0, "6214e9"),
        ]
        assert trace.jobs[0].pod_gpus == [8, 8]
        assert trace.skipped == {}

    def test_crosses_dst_and_months_as_plain_seconds(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "philly.csv",
            PHILLY_HEADER
            + "2017-11-04 12:00:00,1,1,1,a\n"
            + "2017-11-05 12:00:00,1,1,1,a\n"
            + "2017-12-05 12:00:00,1,1,1,a\n",
        )
        assert [j.submit_s for j in load_philly(path).jobs] == [0.0, 86400.0, 31 * 86400.0]

    def test_zero_gpu_rows_are_skipped_and_counted(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "philly.csv",
            PHILLY_HEADER + "2017-10-09 07:01:55,66.0,0,0,11cb48\n2017-10-09 07:01:56,5,1,5,x\n",
        )
        trace = load_philly(path)
        assert [j.id for j in trace.jobs] == ["philly-3"]
        assert trace.skipped == {"zero_gpus": 1}

    @pytest.mark.parametrize(
        ("row", "problem"),
        [
            ("2017-10-09 07:01:55,-1.0,1,0,11cb48", "duration: negative"),
            ("2017-10-09 07:01:55,,1,0,11cb48", "duration: not a number"),
            ("2017-10-09 07:01:55,nan,1,0,11cb48", "duration: not a finite number"),
            ("2017-10-09 07:01:55,5,1.5,0,11cb48", "num_gpus: not a non-negative integer"),
            ("09/10/2017 07:01,5,1,5,11cb48", "timestamp: not YYYY-MM-DD"),
            ("2017-10-09 07:01:55,5,1,5,", "cluster: empty"),
            ("2017-10-09 07:01:55,5,1,5", "expected 5 fields, got 4"),
        ],
    )
    def test_malformed_row_is_reported_by_line_and_skipped(
        self, tmp_path: Path, row: str, problem: str
    ) -> None:
        good = "2017-10-09 07:00:00,1,1,1,a\n"
        path = write(tmp_path, "philly.csv", PHILLY_HEADER + good + row + "\n" + good)
        trace = load_philly(path)
        assert [j.id for j in trace.jobs] == ["philly-2", "philly-4"]
        assert trace.skipped == {"malformed": 1}
        (message,) = trace.malformed
        assert message.startswith(f"{path}:3: ")
        assert problem in message
        assert "\n" not in message

    def test_wrong_file_is_refused_by_its_header(self, tmp_path: Path) -> None:
        path = write(tmp_path, "itp.csv", ITP_HEADER + "a,1,2,3\n")
        with pytest.raises(TraceFormatError, match=r"itp\.csv:1: missing column\(s\) timestamp"):
            load_philly(path)

    def test_missing_and_empty_files(self, tmp_path: Path) -> None:
        with pytest.raises(TraceFormatError, match=r"nope\.csv: cannot open"):
            load_philly(tmp_path / "nope.csv")
        with pytest.raises(TraceFormatError, match="empty file"):
            load_philly(write(tmp_path, "empty.csv", ""))

    def test_vc_sizes(self, tmp_path: Path) -> None:
        path = write(tmp_path, "philly_vc.csv", "vc,node num\n6214e9,64\ned69ec,8\n")
        assert load_philly_vc_sizes(path) == {"6214e9": 64, "ed69ec": 8}

    @pytest.mark.parametrize(
        ("rows", "problem"),
        [("a,4\na,8\n", ":3: vc: 'a' listed twice"), ("a,0\n", ":2: node num: must be > 0")],
    )
    def test_vc_sizes_refuse_bad_quota(self, tmp_path: Path, rows: str, problem: str) -> None:
        path = write(tmp_path, "philly_vc.csv", "vc,node num\n" + rows)
        with pytest.raises(TraceFormatError, match=problem):
            load_philly_vc_sizes(path)


class TestItp:
    def test_rows_keep_collection_relative_times(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "cluster04.csv",
            ITP_HEADER
            + "c9c620ea-4336-c1a9-8abe-e26bd13076b8,5810,288476,16\n"
            + "be631d51-a07b-5693-739f-f4379ec5d0cc,5813,292893,1\n",
        )
        trace = load_itp(path)
        assert [(j.id, j.submit_s, j.duration_s, j.gpus, j.tenant) for j in trace.jobs] == [
            ("c9c620ea-4336-c1a9-8abe-e26bd13076b8", 5810.0, 288476.0, 16, None),
            ("be631d51-a07b-5693-739f-f4379ec5d0cc", 5813.0, 292893.0, 1, None),
        ]

    def test_out_of_order_rows_are_sorted(self, tmp_path: Path) -> None:
        path = write(tmp_path, "c.csv", ITP_HEADER + "b,20,1,1\na,10,1,1\nc,20,1,1\n")
        assert [j.id for j in load_itp(path).jobs] == ["a", "b", "c"]

    def test_duplicate_id_is_reported_and_skipped(self, tmp_path: Path) -> None:
        path = write(tmp_path, "c.csv", ITP_HEADER + "a,1,1,1\na,2,1,1\nb,x,1,1\nc,3,1,0\n")
        trace = load_itp(path)
        assert [j.id for j in trace.jobs] == ["a"]
        assert trace.skipped == {"zero_gpus": 1, "malformed": 2}
        todo = "; fix or remove that row, or check that the file is a trace of the kind given"
        assert trace.malformed == (
            f"{path}:3: job_id: 'a' appears twice{todo}",
            f"{path}:4: submission_time: not a number: 'x'{todo}",
        )

    def test_zero_gpus_skipped(self, tmp_path: Path) -> None:
        trace = load_itp(write(tmp_path, "c.csv", ITP_HEADER + "a,1,1,0\nb,2,1,1\n"))
        assert [j.id for j in trace.jobs] == ["b"]
        assert trace.skipped == {"zero_gpus": 1}


class TestOpenb:
    ROWS = (
        "openb-pod-0000,10000,20480,1,1000,,LS,Running,0,9000000,0\n"
        "openb-pod-0001,5000,10240,1,300,,BE,Failed,100,200,150\n"
        "openb-pod-0002,8000,30000,0,0,,LS,Succeeded,100,400,100\n"
        "openb-pod-0003,11908,47104,1,1000,,BE,Pending,120,300,\n"
        "openb-pod-0004,88000,327680,8,1000,,Burstable,Succeeded,130,1130,130\n"
    )

    def test_pods_become_jobs_with_resources_and_observed_wait(self, tmp_path: Path) -> None:
        trace = load_openb_pods(write(tmp_path, "pods.csv", OPENB_HEADER + self.ROWS))
        assert trace.skipped == {"never_scheduled": 1}
        first, failed, cpu_only, big = trace.jobs
        assert (first.id, first.submit_s, first.duration_s, first.truncated) == (
            "openb-pod-0000", 0.0, 9000000.0, True
        )  # fmt: skip
        assert (failed.gpus, failed.gpu_milli, failed.cpu_milli, failed.memory_mib) == (
            1, 300, 5000, 10240
        )  # fmt: skip
        assert (failed.duration_s, failed.observed_wait_s, failed.qos) == (50.0, 50.0, "BE")
        assert not failed.truncated
        assert (cpu_only.gpus, cpu_only.pod_gpus, cpu_only.duration_s) == (0, [0], 300.0)
        assert (big.gpus, big.pod_gpus, big.qos) == (8, [8], "Burstable")

    def test_cpu_only_pods_can_be_left_out(self, tmp_path: Path) -> None:
        path = write(tmp_path, "pods.csv", OPENB_HEADER + self.ROWS)
        trace = load_openb_pods(path, include_cpu_only=False)
        assert [j.id for j in trace.jobs] == ["openb-pod-0000", "openb-pod-0001", "openb-pod-0004"]
        assert trace.skipped == {"never_scheduled": 1, "zero_gpus": 1}

    def test_end_before_start_is_an_error(self, tmp_path: Path) -> None:
        row = "p,1,1,1,1000,,LS,Failed,100,120,150\n"
        with pytest.raises(TraceFormatError, match=r"pods\.csv:2: deletion_time before sched"):
            load_openb_pods(write(tmp_path, "pods.csv", OPENB_HEADER + row))

    def test_nodes_group_by_shape_in_first_seen_order(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "nodes.csv",
            "sn,cpu_milli,memory_mib,gpu,model\n"
            "openb-node-0000,64000,262144,2,P100\n"
            "openb-node-0001,96000,393216,8,G2\n"
            "openb-node-0002,64000,262144,2,P100\n"
            "openb-node-0003,16000,122880,2,P100\n",
        )
        groups = load_openb_nodes(path)
        assert [(g.model, g.gpus_per_node, g.cpu_milli, g.memory_mib, g.nodes) for g in groups] == [
            ("P100", 2, 64000, 262144, ("openb-node-0000", "openb-node-0002")),
            ("G2", 8, 96000, 393216, ("openb-node-0001",)),
            ("P100", 2, 16000, 122880, ("openb-node-0003",)),
        ]
        assert [g.count for g in groups] == [2, 1, 1]
        assert sum(g.total_gpus for g in groups) == 14


def test_load_trace_dispatches_on_kind(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", ITP_HEADER + "a,1,1,1\n")
    assert load_trace(f"itp:{path}").kind == "itp"
    for bad in ("itp", f"slurm:{path}", "philly:"):
        with pytest.raises(ValueError, match="KIND:PATH with KIND one of philly, itp, openb"):
            load_trace(bad)
