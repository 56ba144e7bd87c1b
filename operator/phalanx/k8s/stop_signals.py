"""SIGTERM and SIGINT stop the operator once; a repeat while it stops is one log line.

kopf installs `signal_flag.set_result` as the loop's handler for both signals. A second signal
while the operator is still shutting down (a kubelet or `phalanx dev-cluster down` signalling
again, Ctrl-C pressed twice) then raises `InvalidStateError` inside the event loop, which asyncio
logs at ERROR with a traceback: an operator that stopped cleanly looks as if it crashed. Once kopf
has started we replace its handlers with ours, which raise the same stop flag kopf already
watches and only note a repeat. A signal never escalates: SIGKILL is what stops at once, as a
kubelet sends after the grace period.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def install(stop_flag: asyncio.Event) -> bool:
    """Make SIGTERM and SIGINT set `stop_flag` in the running loop; False where signals cannot
    be handled (not the main thread, or no Unix signals), leaving whatever handled them."""
    if threading.current_thread() is not threading.main_thread():
        return False
    loop = asyncio.get_running_loop()
    since: float | None = None  # when the first signal came

    def on_signal(sig: signal.Signals) -> None:
        nonlocal since
        if since is not None:
            log.info(
                "%s received again while stopping (for %.1f s); send SIGKILL to stop at once",
                sig.name,
                time.monotonic() - since,
            )
            return
        since = time.monotonic()
        log.info("%s received; stopping", sig.name)
        stop_flag.set()

    try:
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, on_signal, sig)
    except NotImplementedError:
        return False
    return True
