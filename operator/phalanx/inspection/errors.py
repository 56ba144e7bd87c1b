"""The one error the views raise: printed by the CLI as one line, exit code 1."""

from __future__ import annotations


class ViewError(Exception):
    """Something the user can fix: no kubeconfig, CRDs not installed, PodGroup not found, …"""
