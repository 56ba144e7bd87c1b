"""What a kubelet does to a pod it stops for a deletion, for the pods of one test: the pod turns
`Failed` first (its containers killed: `getPhase` of a terminal pod in the kubelet), and only then
goes.

kwok's fake kubelet deletes a pod at once unless a finalizer holds it; one that a finalizer holds
is turned `Failed` by the dev cluster's terminate stage (`devcluster/stages.py`), as a kubelet
would. A test that depends on what a controller sees in that moment (the Training Operator fails a
`restartPolicy: Never` job for any failed replica) gives its pods the finalizer `FINALIZER`, and
this stand-in lets each go `LINGER_S` after it turned terminal — a kubelet's status update and its
final delete are apart about that much.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

FINALIZER = "devcluster.phalanx.dev/kubelet-stand-in"
LINGER_S = 0.5
RELEASE = {"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}}
"""A strategic merge patch (the client's for a dict) taking only our finalizer away."""


class KubeletStandIn:
    """Releases, in a thread, the terminal pods under deletion that `selector` finds in `ns`."""

    def __init__(self, core: Any, ns: str, selector: str) -> None:
        self.core, self.ns, self.selector = core, ns, selector
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.released = 0
        self.error: BaseException | None = None

    def __enter__(self) -> KubeletStandIn:
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._release_all()
        if self.error is not None:
            raise RuntimeError(f"the kubelet stand-in failed: {self.error}") from self.error

    def _release(self, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.patch_namespaced_pod(name, self.ns, RELEASE)
        except ApiException as exc:
            if exc.status != 404:  # gone
                raise

    def _release_all(self) -> None:
        """Whatever happened in the test, no pod is left held by the finalizer (the namespace's
        teardown would wait on it for ever)."""
        for p in self.core.list_namespaced_pod(self.ns, label_selector=self.selector).items:
            if FINALIZER in (p.metadata.finalizers or []):
                self._release(p.metadata.name)

    def _run(self) -> None:
        terminal_since: dict[str, float] = {}
        try:
            while not self._stop.is_set():
                pods = self.core.list_namespaced_pod(self.ns, label_selector=self.selector).items
                for p in pods:
                    held = FINALIZER in (p.metadata.finalizers or [])
                    if not (held and p.metadata.deletion_timestamp):
                        continue
                    if p.status.phase not in ("Failed", "Succeeded") and p.spec.node_name:
                        continue  # bound, not yet stopped (one never bound has nothing to stop)
                    since = terminal_since.setdefault(p.metadata.uid, time.monotonic())
                    if time.monotonic() - since < LINGER_S:
                        continue
                    self._release(p.metadata.name)
                    self.released += 1
                self._stop.wait(0.1)
        except BaseException as exc:  # reported by __exit__, not lost in the thread
            self.error = exc
