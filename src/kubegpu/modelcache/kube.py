"""The API edge of the agent and the controller: lightkube, generic resources for the CRDs, merge patches.

Every write is a JSON merge patch (RFC 7386); those computed from an object we read carry its
resourceVersion, so a concurrent change answers 409 and the loop retries on its next turn
instead of overwriting. Objects cross this edge as plain dicts.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from kubegpu.errors import SourceError
from kubegpu.modelcache.rollout import versions_used_by_pods
from kubegpu.modelcache.spec import GROUP, KIND, PLURAL, VERSION, ModelCache
from kubegpu.sources.kubeconfig import (credential_error, lightkube_client, request_timeouts, resolve_cluster,
                                        transport_error)

LWS = ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets")


class Conflict(Exception):
    """The object changed since we read it (409); try again on the next turn."""


def _as_dict(obj: Any) -> dict:
    return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)


class KubeEdge:
    def __init__(self, client: Any, cluster: Any = None, timeouts: Any = None) -> None:
        self.client = client
        self.cluster, self.timeouts = cluster, timeouts  # for naming the server when it cannot be reached
        self.ModelCache = create_global_resource(GROUP, VERSION, KIND, PLURAL)
        self.kinds = {"Deployment": Deployment, "StatefulSet": StatefulSet,
                      "LeaderWorkerSet": create_namespaced_resource(*LWS)}
        self.Node, self.Pod = Node, Pod

    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None) -> "KubeEdge":
        timeouts = request_timeouts(os.environ.get("KUBEGPU_TIMEOUT"))
        return cls(lightkube_client(kubeconfig, context, timeouts), resolve_cluster(kubeconfig, context), timeouts)

    def _call(self, what: str, fn, *args, **kwargs):
        """Every failure to get an answer is one SourceError naming the call (the loops retry on it)."""
        try:
            return fn(*args, **kwargs)
        except ApiError as err:
            if err.status.code == 409:
                raise Conflict(f"{what}: {err.status.message}") from None
            raise SourceError(f"{what}: {err.status.code} {err.status.message}") from None
        except httpx2.HTTPStatusError as err:  # an error answer that is not a v1 Status
            raise SourceError(f"{what}: HTTP {err.response.status_code}") from None
        except httpx2.HTTPError as err:
            if self.cluster is not None:
                raise SourceError(f"{what}: {transport_error(err, self.cluster, self.timeouts, what)}") from None
            raise SourceError(f"{what}: {' '.join(str(err).split()) or type(err).__name__}") from None
        except (ConfigError, OSError) as err:
            if self.cluster is not None:
                raise SourceError(f"{what}: {credential_error(err, self.cluster)}") from None
            raise SourceError(f"{what}: {' '.join(str(err).split())}") from None
        except ValueError as err:  # an answer that is not JSON (a proxy's HTML page)
            raise SourceError(f"{what}: the answer is not a Kubernetes object ({err})") from None

    # -- reads ----------------------------------------------------------------------------------------
    def list_caches(self) -> list[dict]:
        return [_as_dict(o) for o in self._call("list modelcaches", lambda: list(self.client.list(self.ModelCache)))]

    def get_cache(self, name: str) -> dict:
        return _as_dict(self._call(f"get modelcache {name}", self.client.get, self.ModelCache, name))

    def list_nodes(self) -> list[dict]:
        return [_as_dict(n) for n in self._call("list nodes", lambda: list(self.client.list(self.Node)))]

    def get_node(self, name: str) -> dict:
        return _as_dict(self._call(f"get node {name}", self.client.get, self.Node, name))

    def pods_on_node(self, node: str) -> list[dict]:
        return [_as_dict(p) for p in self._call(
            f"list pods on {node}", lambda: list(self.client.list(self.Pod, namespace="*",
                                                                   fields={"spec.nodeName": node})))]

    def get_workload(self, kind: str, namespace: str, name: str) -> dict | None:
        def get():
            try:
                return self.client.get(self.kinds[kind], name, namespace=namespace)
            except ApiError as err:
                if err.status.code == 404:
                    return None
                raise

        obj = self._call(f"get {kind} {namespace}/{name}", get)
        return None if obj is None else _as_dict(obj)

    def versions_in_use(self, cache: ModelCache, node: str) -> set[str]:
        return versions_used_by_pods(cache, self.pods_on_node(node))

    # -- writes (merge patches) ------------------------------------------------------------------------
    def _patch(self, what: str, res, name: str, patch: dict, namespace: str | None = None) -> dict:
        return _as_dict(self._call(what, self.client.patch, res, name, patch, namespace=namespace,
                                   patch_type=PatchType.MERGE))

    def patch_cache_status(self, name: str, status: dict, resource_version: str | None = None) -> dict:
        body: dict[str, Any] = {"status": status}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        return self._patch(f"patch modelcache {name} status", self.ModelCache.Status, name, body)

    def patch_node(self, name: str, patch: dict) -> dict:
        return self._patch(f"patch node {name}", self.Node, name, patch)

    def patch_workload(self, kind: str, namespace: str, name: str, patch: dict) -> dict:
        return self._patch(f"patch {kind} {namespace}/{name}", self.kinds[kind], name, patch, namespace)
