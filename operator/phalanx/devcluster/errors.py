"""The one error type of the local-cluster tooling.

Every failure a user can cause (bad shape, port in use, missing Go, cluster already up) is raised
as a `DevClusterError` whose message is one line that says what to do; the CLI prints it and exits
non-zero without a traceback.
"""

from __future__ import annotations


class DevClusterError(Exception):
    """A user-facing failure of `phalanx dev-cluster`."""
