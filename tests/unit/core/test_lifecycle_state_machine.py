"""One gang driven through random events, an operator carrying out `core.lifecycle` after each.

The model cluster holds pods (their states) and the PodGroup's durable status (phase,
`scheduledAt`, the `Evicted` mark, `memberFailures`); the model operator holds one thing in
memory, whether a bind round is under way. "Operator restarted" drops that memory, so every
decision after it is made from what the API holds, as a real restart is.

Invariants after every step:
- the phase is one of the contract's;
- a gang is never left partly bound past one bind round: partly bound, not binding and never
  run whole, the verdict is a repair (with a decision record) or a rollback;
- a member succeeding never triggers an eviction (checked as it happens), and `MemberFailed`
  only for a gang with fewer than `minMember` members live or done;
- `Succeeded` exactly when the work is done: at least `minMember` succeeded and none live or
  waiting (or it was done, and nothing came back to life).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from phalanx.core.lifecycle import (
    LIVE,
    Action,
    EvictedMark,
    GangFacts,
    LifecyclePolicy,
    MemberState,
    Phase,
    Record,
    decide,
)
from phalanx.core.reasons import EvictionReason

POLICY = LifecyclePolicy(eviction_retry=30.0)
MAX_PODS = 8


class GangLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.min_member = 3
        self.members: list[MemberState] = [MemberState.PENDING] * 3
        self.now = 1000.0
        self.phase: str | None = None
        self.scheduled_at: float | None = None
        self.evicted: EvictedMark | None = None
        self.failures = 0
        self.binding = False
        self.time_limit: float | None = 600.0
        self.record = Record.NONE

    # -- the world ------------------------------------------------------------------------------

    def facts(self) -> GangFacts:
        return GangFacts(
            id="ns/g",
            min_member=self.min_member,
            members=tuple(self.members),
            created=0.0,
            recorded_phase=self.phase,
            scheduled_at=self.scheduled_at,
            evicted=self.evicted,
            binding=self.binding,
            member_failures=self.failures,
            time_limit=self.time_limit,
            record=self.record,
        )

    def _present(self) -> int:
        return sum(1 for s in self.members if s in LIVE or s is MemberState.SUCCEEDED)

    def _indices(self, states: frozenset[MemberState] | set[MemberState]) -> list[int]:
        return [i for i, s in enumerate(self.members) if s in states]

    @rule(data=st.data())
    def a_member_starts_running(self, data: st.DataObject) -> None:
        bound = self._indices({MemberState.BOUND})
        if bound:
            self.members[data.draw(st.sampled_from(bound))] = MemberState.RUNNING

    @rule(data=st.data())
    def a_member_succeeds(self, data: st.DataObject) -> None:
        live = self._indices(LIVE)
        if live:
            short_before = self._present() < self.min_member
            self.members[data.draw(st.sampled_from(live))] = MemberState.SUCCEEDED
            after = decide(self.facts(), POLICY, self.now)
            if after.reason == EvictionReason.MEMBER_FAILED and after.action is Action.EVICT:
                assert short_before, "a success made a whole gang short"

    @rule(data=st.data(), to=st.sampled_from([MemberState.FAILED, MemberState.LOST]))
    def a_member_fails_or_its_node_is_lost(self, data: st.DataObject, to: MemberState) -> None:
        live = self._indices(LIVE)
        if live:
            self.members[data.draw(st.sampled_from(live))] = to

    @rule(data=st.data())
    def a_member_is_deleted(self, data: st.DataObject) -> None:
        live = self._indices(LIVE)
        if live:
            self.members[data.draw(st.sampled_from(live))] = MemberState.TERMINATING

    @rule()
    def terminating_pods_are_gone(self) -> None:
        self.members = [
            s for s in self.members if s not in (MemberState.TERMINATING, MemberState.LOST)
        ]

    @precondition(lambda self: len(self.members) < MAX_PODS)
    @rule()
    def the_controller_creates_a_pod(self) -> None:
        self.members.append(MemberState.PENDING)

    @rule(dt=st.sampled_from([1.0, 30.0, 700.0]))
    def time_passes(self, dt: float) -> None:
        self.now += dt

    @rule()
    def the_operator_restarts(self) -> None:
        self.binding = False  # all it had in memory

    @rule(data=st.data())
    def the_operator_dies_mid_bind(self, data: st.DataObject) -> None:
        """A bind round cut short: some of the decided members bound, then a restart."""
        d = decide(self.facts(), POLICY, self.now)
        pending = self._indices({MemberState.PENDING})
        if d.action is not Action.SCHEDULE or d.not_before or len(pending) < d.need or d.need < 2:
            return
        self._record_start()
        for i in pending[: data.draw(st.integers(1, d.need - 1))]:
            self.members[i] = MemberState.BOUND
        self.binding = False

    # -- the operator ---------------------------------------------------------------------------

    def _record_start(self) -> None:
        self.phase = Phase.BINDING
        self.scheduled_at = self.now
        self.evicted = None
        self.record = Record.MATCHES

    @rule()
    def the_operator_runs_a_cycle(self) -> None:
        d = decide(self.facts(), POLICY, self.now)
        pending = self._indices({MemberState.PENDING})
        if d.action is Action.SCHEDULE:
            if d.not_before is None and len(pending) >= d.need:
                self._record_start()
                for i in pending[: d.need]:
                    self.members[i] = MemberState.BOUND
                self.phase = Phase.RUNNING  # the bind round ended whole
        elif d.action is Action.RUN:
            self.phase = d.phase
            for i in pending:
                self.members[i] = MemberState.BOUND  # extras and replacements join
        elif d.action is Action.REPAIR:
            # Rolled forward (the cycle found the recorded placement still fits): the rest bind.
            missing = d.need - sum(
                1 for s in self.members if s in LIVE or s is MemberState.SUCCEEDED
            )
            for i in pending[: max(0, missing)]:
                self.members[i] = MemberState.BOUND
            self.phase = Phase.RUNNING
        elif d.action in (Action.EVICT, Action.ROLL_BACK):
            self.record = Record.NONE
            self.evicted = EvictedMark(d.reason, self.now)
            self.phase, self.scheduled_at = Phase.PENDING, None
            if d.reason == EvictionReason.MEMBER_FAILED:
                self.failures = d.member_failures
            self.members = [MemberState.TERMINATING if s in LIVE else s for s in self.members]
        elif d.action in (Action.FAIL, Action.NONE) and d.phase in (Phase.SUCCEEDED, Phase.FAILED):
            self.phase = d.phase

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def the_phase_is_the_contracts(self) -> None:
        d = decide(self.facts(), POLICY, self.now)
        assert d.phase in set(Phase)
        assert self.phase is None or self.phase in set(Phase)

    @invariant()
    def never_partly_bound_past_a_bind_round(self) -> None:
        f = self.facts()
        live = sum(1 for s in f.members if s in LIVE)
        done = sum(1 for s in f.members if s is MemberState.SUCCEEDED)
        partial = live > 0 and live + done < f.min_member
        ran = self.phase in (Phase.RUNNING, Phase.DEGRADED)
        if partial and not self.binding and not ran and self.evicted is None:
            expected = Action.REPAIR if self.record is Record.MATCHES else Action.ROLL_BACK
            assert decide(f, POLICY, self.now).action is expected

    @invariant()
    def only_a_gang_really_short_is_evicted_for_member_failure(self) -> None:
        """Succeeded members count as present: `MemberFailed` means fewer than `minMember`
        members are live or done (a deleted pod that is gone shows only as that shortfall)."""
        d = decide(self.facts(), POLICY, self.now)
        if d.action is Action.EVICT and d.reason == EvictionReason.MEMBER_FAILED:
            assert self._present() < self.min_member, self.members

    @invariant()
    def succeeded_exactly_when_the_work_is_done(self) -> None:
        d = decide(self.facts(), POLICY, self.now)
        live = sum(1 for s in self.members if s in LIVE)
        pending = sum(1 for s in self.members if s is MemberState.PENDING)
        done = sum(1 for s in self.members if s is MemberState.SUCCEEDED)
        finished = live == 0 and (
            self.phase == Phase.SUCCEEDED or (done >= self.min_member and pending == 0)
        )
        if self.phase == Phase.FAILED:
            return  # terminal the other way
        if self.evicted is not None and any(s is MemberState.TERMINATING for s in self.members):
            return  # an eviction is under way: the gang is not done, it is restarting
        assert (d.phase is Phase.SUCCEEDED) == finished, (d, self.members, self.phase)


TestGangLife = GangLife.TestCase
TestGangLife.settings = settings(
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
