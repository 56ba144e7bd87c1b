"""Static node feasibility: node selector, required node affinity, taints and tolerations.

These depend only on the node and on the pod's constraints, never on free capacity, so a cycle
evaluates them once per distinct constraint *signature* (selector, affinity, tolerations, required
topology level) and all gangs with that signature share the result. Label values are arbitrary
strings from the API: anything odd (a non-integer value under `Gt`, an unknown operator) simply
does not match; nothing here raises.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.core.model import MatchExpression, Member, Node, NodeSelectorTerm, Taint, Toleration

#: Hashable form of a member's placement constraints.
Signature = tuple[
    tuple[tuple[str, str], ...],
    tuple[NodeSelectorTerm, ...],
    tuple[Toleration, ...],
    int | None,
]

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def signature(member: Member, required_level: int | None) -> Signature:
    """Key under which feasibility is cached; members with equal keys fit the same nodes."""
    return (
        tuple(sorted(member.node_selector.items())),
        member.affinity,
        member.tolerations,
        required_level,
    )


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """Whether some toleration matches the taint (Kubernetes rules)."""
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists":
            if not t.key or t.key == taint.key:
                return True
        elif t.key == taint.key and t.value == taint.value:
            return True
    return False


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def expression_matches(expr: MatchExpression, labels: Mapping[str, str]) -> bool:
    """One match expression against node labels."""
    op = expr.operator
    present = expr.key in labels
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op == "In":
        return present and labels[expr.key] in expr.values
    if op == "NotIn":
        return not present or labels[expr.key] not in expr.values
    if op in ("Gt", "Lt"):
        if not present or len(expr.values) != 1:
            return False
        have, want = _int(labels[expr.key]), _int(expr.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def affinity_matches(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str]) -> bool:
    """Required node affinity: no terms = anything; else some non-empty term fully matches."""
    if not terms:
        return True
    return any(
        t.match_expressions and all(expression_matches(e, labels) for e in t.match_expressions)
        for t in terms
    )


def node_accepts(node: Node, member: Member) -> bool:
    """Whether `member` may run on `node` at all, capacity aside."""
    if node.unschedulable:
        return False
    labels = node.labels
    for key, value in member.node_selector.items():
        if labels.get(key) != value:
            return False
    if not affinity_matches(member.affinity, labels):
        return False
    return all(
        taint.effect not in BLOCKING_EFFECTS or tolerates(member.tolerations, taint)
        for taint in node.taints
    )
