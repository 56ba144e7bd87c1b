"""Phalanx: all-or-nothing, topology-aware, fair-share batch scheduling of GPU gangs."""

__version__ = "0.1.0"
