"""The write client as `connect` builds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from phalanx.k8s.api import connect


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_the_client_ignores_proxy_variables_and_netrc(tmp_path: Path) -> None:
    """aiohttp looks up proxy variables and reads ~/.netrc on every request of a session that
    trusts the environment (kubernetes_asyncio's does): ~3% of the operator's CPU in a bind
    burst. The operator talks to the API server directly; its pool is sized as asked."""
    kubeconfig = _kubeconfig(tmp_path, "https://127.0.0.1:1")

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


def test_the_lean_write_path_sends_what_the_generated_client_would(tmp_path: Path) -> None:
    """Binds, PodGroup status patches and Events go straight to the client's aiohttp session
    (api.py says why). Against a loopback HTTP server: the path, the method, the content type,
    the answer asked for, the token from the kubeconfig and the JSON body; an error status raises
    ApiError with the API server's message."""
    import json

    from aiohttp import web

    from phalanx.k8s.api import Api, ApiError

    seen: list[tuple[str, str, str | None, str | None, object]] = []
    accepts: list[str | None] = []

    async def handle(request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        accepts.append(request.headers.get("Accept"))
        seen.append(
            (
                request.method,
                request.path,
                request.headers.get("Content-Type"),
                request.headers.get("Authorization"),
                body,
            )
        )
        if request.path.endswith("/gone/status"):
            return web.json_response({"message": 'podgroups "gone" not found'}, status=404)
        return web.json_response({}, status=201)

    async def scenario() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        api_client = await connect(str(_kubeconfig(tmp_path, f"http://127.0.0.1:{port}")))
        api = Api(api_client)
        try:
            await api.bind("ns", "p-0", "uid-1", "node-7")
            await api.patch_group_status("ns", "g", {"phase": "Binding", "placement": None})
            await api.event({"kind": "PodGroup", "name": "g", "namespace": "ns"}, "Scheduled", "m")
            try:
                await api.patch_group_status("ns", "gone", {"phase": "Running"})
            except ApiError as exc:
                assert exc.status == 404 and "not found" in str(exc)
            else:
                raise AssertionError("a 404 answer did not raise")
        finally:
            await api_client.close()
            await runner.cleanup()

    asyncio.run(scenario())
    bind, patch, event, _ = seen
    assert bind[:4] == (
        "POST",
        "/api/v1/namespaces/ns/pods/p-0/binding",
        "application/json",
        "Bearer secret-token",
    )
    assert bind[4] == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p-0", "namespace": "ns", "uid": "uid-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
    }
    assert patch[:3] == (
        "PATCH",
        "/apis/phalanx.dev/v1alpha1/namespaces/ns/podgroups/g/status",
        "application/merge-patch+json",
    )
    assert patch[4] == {"status": {"phase": "Binding", "placement": None}}
    # A status patch asks only for the object's metadata back (the bind and the Event: JSON).
    assert accepts[1] is not None and accepts[1].startswith(
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    ), accepts[1]
    assert accepts[0] == accepts[2] == "application/json", accepts
    assert event[:2] == ("POST", "/api/v1/namespaces/ns/events")
    assert isinstance(event[4], dict) and event[4]["reason"] == "Scheduled"
