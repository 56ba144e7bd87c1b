"""The one error the views raise: printed by the CLI as one line, exit code 1."""

from __future__ import annotations


class ViewError(Exception):
    """Something the user can fix: no kubeconfig, CRDs not installed, PodGroup not found, …"""


class PodGroupNotFound(ViewError):
    """No such PodGroup (the API is served): `phalanx explain` adds the pods that name it."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f'PodGroup "{name}" not found in namespace "{namespace}"')
        self.namespace = namespace
        self.name = name
