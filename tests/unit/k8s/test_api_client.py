"""The write client as `connect` builds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from phalanx.k8s.api import connect


def test_the_client_ignores_proxy_variables_and_netrc(tmp_path: Path) -> None:
    """aiohttp looks up proxy variables and reads ~/.netrc on every request of a session that
    trusts the environment (kubernetes_asyncio's does): ~3% of the operator's CPU in a bind
    burst. The operator talks to the API server directly; its pool is sized as asked."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )

    async def build() -> tuple[bool, int]:
        api_client = await connect(str(kubeconfig), pool=77)
        session = api_client.rest_client.pool_manager
        assert session.connector is not None
        try:
            return session.trust_env, session.connector.limit
        finally:
            await api_client.close()

    trust_env, limit = asyncio.run(build())
    assert trust_env is False
    assert limit == 77
