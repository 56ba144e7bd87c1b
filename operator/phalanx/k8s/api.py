"""The operator's writes to the API server, on kubernetes_asyncio.

Why an async client: a gang's members are bound concurrently (one `pods/binding` POST each) from
the same event loop kopf runs on; a thread-pooled sync client would add a thread hop per call and
cap concurrency at the pool size. Responses we do not read are not deserialised
(`_preload_content=False`), which matters for binding throughput.

Every call raises `ApiError` with the HTTP status: callers decide on retries by status (409
conflict, 404 gone, 429 disruption budget), not by exception type.

The three writes of a bind burst — bindings, PodGroup status patches, Events — skip the generated
client and go straight to its aiohttp session (`Api._send`) with a body serialised once by orjson:
the generated call path (parameter sanitising, header and URL assembly, `json.dumps`) was 8–12%
of the operator's CPU samples in a burst, on a machine whose 2 cores the API server needs. Auth
headers, TLS, proxy and server name still come from the client's configuration, so both paths
talk to the API server the same way. The rarer calls keep the generated client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp
import orjson
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

GROUP, VERSION = "phalanx.dev", "v1alpha1"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
"""Accept header of the status patches: their answer is only the object's metadata. We never read
it, and encoding the whole PodGroup back is API-server CPU in the middle of a bind burst (where a
binding's answer is a small Status); the plain form after the comma is the fallback."""
log = logging.getLogger("phalanx.api")


class ApiError(Exception):
    """An error status from the API server, with its message.

    Pickles with both fields (`__reduce__`), as every exception of ours must: the default rebuilds
    an exception from its one formatted argument, which a two-argument `__init__` refuses.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message

    def __reduce__(self) -> tuple[type[ApiError], tuple[int, str]]:
        return type(self), (self.status, self.message)


def _error(exc: ApiException) -> ApiError:
    try:
        message = json.loads(exc.body or b"").get("message", exc.reason)
    except (TypeError, ValueError, AttributeError):
        message = str(exc.reason)
    return ApiError(int(exc.status or 0), str(message))


async def drain(call: Any) -> bytes:
    """Await a call made with `_preload_content=False`, read its body, raise on an error status.

    Reading the body returns the keep-alive connection to the pool (an unread aiohttp response
    holds it). The client raises on error statuses only when it preloads content, so the check
    is ours.
    """
    try:
        resp = await call
        body: bytes = await resp.read()
    except ApiException as exc:
        raise _error(exc) from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ApiError(0, f"connection: {exc}") from exc
    if not 200 <= resp.status <= 299:
        _raise_for(resp.status, resp.reason, body)
    return body


async def connect(kubeconfig: str | None = None, pool: int = 64) -> client.ApiClient:
    """In-cluster config when running in a pod, else the kubeconfig (`KUBECONFIG`).

    Either way the connection pool is sized above the bind concurrency: the client's default
    (a few connections per CPU) would quietly cap the binds in flight in a small pod.
    """
    conf = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
    except config.ConfigException:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
    conf.connection_pool_maxsize = pool
    api_client = client.ApiClient(configuration=conf)
    # kubernetes_asyncio's session trusts the environment, so aiohttp looked up proxy variables
    # and read ~/.netrc on every request: ~3% of the operator's CPU in a bind burst. We talk to
    # the API server directly (in-cluster, or the kubeconfig's server), as kopf does.
    api_client.rest_client.pool_manager._trust_env = False
    return api_client


class ClusterWrites(Protocol):
    """What the scheduling loop needs from the API server: the seam its unit tests fake."""

    async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None: ...
    async def evict(self, namespace: str, pod: str, grace_s: int) -> None: ...
    async def read_pod(self, namespace: str, pod: str) -> dict[str, Any]: ...
    async def delete_pod(
        self, namespace: str, pod: str, uid: str | None = None, grace_s: int = 0
    ) -> None: ...
    async def create_pod(self, namespace: str, body: Mapping[str, Any]) -> None: ...
    async def patch_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None: ...
    async def patch_native_group_status(
        self, namespace: str, name: str, conditions: list[Mapping[str, Any]]
    ) -> None: ...
    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None: ...
    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None: ...
    async def patch_workload(
        self, api_version: str, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None: ...
    async def delete_group(self, namespace: str, name: str, uid: str) -> None: ...
    async def patch_pod_condition(
        self, namespace: str, pod: str, condition: Mapping[str, Any]
    ) -> None: ...
    async def event(
        self,
        involved: Mapping[str, str],
        reason: str,
        message: str,
        kind_of_event: str = "Normal",
    ) -> None: ...


def _raise_for(status: int, reason: str | None, body: bytes) -> None:
    if 200 <= status <= 299:
        return
    try:
        message = json.loads(body).get("message", reason)
    except (TypeError, ValueError, AttributeError):
        message = reason
    raise ApiError(int(status), str(message))


class Api:
    """The handful of calls the scheduler makes."""

    def __init__(self, api_client: client.ApiClient, component: str = "phalanx") -> None:
        self.client = api_client
        # Typed as Any: the generated signatures ask for model classes, but the client accepts
        # plain dict bodies, which is what we send (no model construction per call).
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.coordination: Any = client.CoordinationV1Api(api_client)
        self.component = component

    async def _send(
        self,
        method: str,
        path: str,
        body: object,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> bytes:
        """One request on the client's own session, body serialised by orjson (see above)."""
        headers = {
            **self.client.default_headers,
            "Accept": accept,
            "Content-Type": content_type,
        }
        await self.client.update_params_for_auth(headers, [], ["BearerToken"])
        rest = self.client.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra["proxy"], extra["proxy_headers"] = rest.proxy, rest.proxy_headers
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        url = f"{self.client.configuration.host}{quote(path)}"
        try:
            async with rest.pool_manager.request(
                method, url, data=orjson.dumps(body), headers=headers, **extra
            ) as resp:
                raw: bytes = await resp.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, f"connection: {exc}") from exc
        _raise_for(resp.status, resp.reason, raw)
        return raw

    async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self._send("POST", f"/api/v1/namespaces/{namespace}/pods/{pod}/binding", body)

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace},
            "deleteOptions": {"gracePeriodSeconds": grace_s},
        }
        await drain(
            self.core.create_namespaced_pod_eviction(pod, namespace, body, _preload_content=False)
        )

    async def read_pod(self, namespace: str, pod: str) -> dict[str, Any]:
        raw = await drain(self.core.read_namespaced_pod(pod, namespace, _preload_content=False))
        data: dict[str, Any] = json.loads(raw)
        return data

    async def delete_pod(
        self, namespace: str, pod: str, uid: str | None = None, grace_s: int = 0
    ) -> None:
        body: dict[str, Any] = {"gracePeriodSeconds": grace_s}
        if uid:
            body["preconditions"] = {"uid": uid}
        await drain(
            self.core.delete_namespaced_pod(pod, namespace, body=body, _preload_content=False)
        )

    async def create_pod(self, namespace: str, body: Mapping[str, Any]) -> None:
        await drain(self.core.create_namespaced_pod(namespace, dict(body), _preload_content=False))

    async def patch_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        """A JSON merge patch of the status subresource (null removes a field)."""
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/podgroups/{name}/status"
        await self._send("PATCH", path, {"status": dict(status)}, MERGE_PATCH, METADATA_ONLY)

    async def patch_native_group_status(
        self, namespace: str, name: str, conditions: list[Mapping[str, Any]]
    ) -> None:
        """The conditions of a native `scheduling.k8s.io/v1alpha2` PodGroup (a merge patch: the
        whole list, as the watch last showed it with ours set)."""
        path = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{name}/status"
        body = {"status": {"conditions": [dict(c) for c in conditions]}}
        await self._send("PATCH", path, body, MERGE_PATCH, METADATA_ONLY)

    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        path = f"/apis/{GROUP}/{VERSION}/queues/{name}/status"
        await self._send("PATCH", path, {"status": dict(status)}, MERGE_PATCH, METADATA_ONLY)

    async def patch_workload(
        self, api_version: str, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        """A JSON merge patch of a Job or JobSet (suspending it to evict its gang, resuming it:
        `k8s/job_suspension.py`); `metadata.uid` in the patch makes it that very object's."""
        path = f"/apis/{api_version}/namespaces/{namespace}/{plural}/{name}"
        await self._send("PATCH", path, dict(patch), MERGE_PATCH, METADATA_ONLY)

    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None:
        """Create a PodGroup (a managed one, `k8s/gang_maker.py`)."""
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/podgroups"
        await self._send("POST", path, dict(body), accept=METADATA_ONLY)

    async def delete_group(self, namespace: str, name: str, uid: str) -> None:
        """Delete a PodGroup, only the very object `uid` (a re-created one of the same name is
        left alone)."""
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/podgroups/{name}"
        await self._send("DELETE", path, {"preconditions": {"uid": uid}})

    async def patch_pod_condition(
        self, namespace: str, pod: str, condition: Mapping[str, Any]
    ) -> None:
        """Set one condition of a pod's status (`PodScheduled`, as kube-scheduler does): a
        strategic merge patch, which merges `conditions` by `type` (a JSON merge patch would
        replace the kubelet's conditions with ours)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/status"
        body = {"status": {"conditions": [dict(condition)]}}
        await self._send("PATCH", path, body, STRATEGIC_MERGE_PATCH, METADATA_ONLY)

    async def event(
        self,
        involved: Mapping[str, str],
        reason: str,
        message: str,
        kind_of_event: str = "Normal",
    ) -> None:
        """A core/v1 Event on a pod or PodGroup; best effort (never fails the caller)."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        namespace = involved.get("namespace", "default")
        body = {
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": dict(involved),
            "reason": reason,
            "message": message[:1024],
            "type": kind_of_event,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
        }
        try:
            await self._send("POST", f"/api/v1/namespaces/{namespace}/events", body)
        except ApiError as exc:
            # A missing permission is a deployment bug: say so. (A namespace being deleted
            # refuses new Events with 403 too; that is no news.)
            if exc.status == 403 and "being terminated" not in str(exc):
                log.warning("event %s on %s refused: %s", reason, involved.get("name"), exc)
            return
