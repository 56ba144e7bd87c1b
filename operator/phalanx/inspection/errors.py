"""The one error the views raise: printed by the CLI as one line, exit code 1."""

from __future__ import annotations


class ViewError(Exception):
    """Something the user can fix: no kubeconfig, CRDs not installed, PodGroup not found, …"""


class PodGroupNotFound(ViewError):
    """No such PodGroup (the API is served): `phalanx explain` adds the pods that name it.
    It pickles with its two fields (`__reduce__`), as every exception of the package does."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f'PodGroup "{name}" not found in namespace "{namespace}"')
        self.namespace = namespace
        self.name = name

    def __reduce__(self) -> tuple[type[PodGroupNotFound], tuple[str, str]]:
        return type(self), (self.namespace, self.name)
