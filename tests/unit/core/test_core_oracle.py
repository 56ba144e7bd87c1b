"""The chosen placement spans the minimum possible number of leaves (exact brute-force oracle)."""

from __future__ import annotations

from core_oracle import Instance, chosen_leaves, min_leaves, oracle_figure


def test_oracle_itself_on_a_hand_made_case() -> None:
    inst = Instance(
        free={
            "a": {"a-n1": 8, "a-n2": 0},
            "b": {"b-n1": 4, "b-n2": 4},
            "c": {"c-n1": 8, "c-n2": 8},
        },
        spine_of={"a": "s0", "b": "s0", "c": "s1"},
        pods=(8, 8),
    )
    assert min_leaves(inst) == 1  # only leaf c holds two 8-GPU pods
    assert chosen_leaves(inst) == 1
    assert min_leaves(Instance(inst.free, inst.spine_of, (8, 8, 8, 8))) is None


def test_min_leaves_on_random_fragmented_instances() -> None:
    fig = oracle_figure(instances=400, seed=7)
    print(
        f"\noracle: {fig.at_minimum}/{fig.feasible} feasible instances at the minimum number of "
        f"leaves = {fig.pct:.2f}%; worst excess {fig.worst_excess} leaf"
    )
    assert fig.feasible >= 300
    assert fig.pct >= 99.0
    assert fig.worst_excess <= 1
