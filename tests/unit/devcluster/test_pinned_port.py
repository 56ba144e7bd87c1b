"""`phalanx dev-cluster up --port P`: every other component gets a port of its own, never P.

kwokctl probes down from 32767 for ports nothing listens on; a pinned apiserver port is not
listened on while it probes, so it was handed out again (to the kwok controller) and the nodes
never turned Ready. The real cluster made twice at one port is
`tests/integration/test_dev_cluster.py`; here, what reaches kwokctl.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.devcluster import cluster
from phalanx.devcluster.binaries import Binaries


def _options(text: str) -> dict[str, object]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    conf = next(d for d in docs if d.get("kind") == "KwokctlConfiguration")
    return dict(conf["options"])


def test_a_pinned_port_pins_every_other_port_apart_from_it(tmp_path: Path) -> None:
    options = _options(cluster._kwokctl_config(Binaries(tmp_path), 32764))
    assert options["kubeApiserverPort"] == 32764
    others = [options[name] for name in cluster.OTHER_PORT_OPTIONS]
    assert all(isinstance(p, int) and 0 < p < 65536 for p in others), others
    assert len(set(others)) == len(others), f"two components share a port: {others}"
    assert 32764 not in others


def test_the_pinned_port_is_skipped_when_the_kernel_offers_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel hands out the pinned port first: it is passed over, and every socket opened
    is closed again."""
    offers = iter([32764, 40001, 32764, 40002, 40003, 40004, 40005])
    opened: list[_FakeSocket] = []

    class _FakeSocket:
        def __init__(self, *_: object) -> None:
            self.port = next(offers)
            self.closed = False
            opened.append(self)

        def bind(self, _: object) -> None:
            pass

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(cluster.socket, "socket", _FakeSocket)
    ports = cluster._other_ports(32764)
    assert list(ports.values()) == [40001, 40002, 40003, 40004, 40005]
    assert list(ports) == list(cluster.OTHER_PORT_OPTIONS)
    assert len(opened) == 7 and all(s.closed for s in opened)


def test_without_a_pinned_port_kwokctl_chooses_them_all(tmp_path: Path) -> None:
    options = _options(cluster._kwokctl_config(Binaries(tmp_path), None))
    assert "kubeApiserverPort" not in options
    assert not set(cluster.OTHER_PORT_OPTIONS) & set(options)
