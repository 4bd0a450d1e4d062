"""The executor's only writes, through lightkube: cordon/uncordon a node, evict a pod (policy/v1).

Reads are small and targeted (one pod, the pods and PDBs of one namespace, one node, the
PriorityClasses, the kube-system namespace for the cluster's identity). Failures are sorted
into what the executor must tell apart: a 429 (PDB or throttling: wait and retry), no answer at
all (connection reset, timeout: look before retrying), and any other answer (stop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import httpx2
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.types import PatchType

from kubegpu.defrag.identity import ClusterIdentity, ca_fingerprint
from kubegpu.sources.kubeconfig import Timeouts, lightkube_client, resolve_cluster


class EvictionRefused(Exception):
    """429: a PodDisruptionBudget (or the server's throttling) says not now."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ApiFailure(Exception):
    """Any other answer than the expected one: the executor stops."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class NoAnswer(Exception):
    """No HTTP answer (connection refused or reset, timeout): the outcome is unknown."""


@dataclass(frozen=True)
class PodView:
    """What the executor needs to know about a live pod."""

    namespace: str
    name: str
    uid: str
    node: str | None
    phase: str | None
    ready: bool
    terminating: bool
    owner_uid: str | None
    owner: str | None          # "Kind/name" of the controller

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ClusterApi(Protocol):
    def get_pod(self, namespace: str, name: str) -> PodView | None: ...
    def list_pods(self, namespace: str) -> list[PodView]: ...
    def namespace_objects(self, namespace: str) -> list[dict]: ...
    def cluster_objects(self) -> list[dict]: ...
    def identity(self) -> ClusterIdentity: ...
    def evict(self, namespace: str, name: str) -> None: ...
    def node_unschedulable(self, node: str) -> bool: ...
    def set_unschedulable(self, node: str, value: bool) -> None: ...


def _view(pod: Pod) -> PodView:
    meta, spec, status = pod.metadata, pod.spec, pod.status
    ctrl = next((r for r in (meta.ownerReferences or []) if r.controller), None)
    ready = any(c.type == "Ready" and c.status == "True" for c in (status.conditions or [])) if status else False
    return PodView(namespace=meta.namespace or "default", name=meta.name, uid=meta.uid or "",
                   node=spec.nodeName if spec else None, phase=status.phase if status else None, ready=ready,
                   terminating=meta.deletionTimestamp is not None, owner_uid=ctrl.uid if ctrl else None,
                   owner=f"{ctrl.kind}/{ctrl.name}" if ctrl else None)


def _message(err: ApiError) -> str:
    status = err.status
    return (status.message if status is not None and status.message else str(err)) or "no message"


class LightkubeApi:
    """ClusterApi over a lightkube Client."""

    def __init__(self, client: Client, *, field_manager: str = "kubegpu-defrag",
                 server: str = "", ca_sha256: str | None = None, context: str | None = None) -> None:
        self.client = client
        self.field_manager = field_manager
        self._where = ClusterIdentity(server=server, ca_sha256=ca_sha256, context=context)

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None,
                        timeouts: Timeouts | None = None) -> "LightkubeApi":
        """A client for the cluster kubectl would use, with kubegpu's auth handling (kubeconfig module)."""
        cluster = resolve_cluster(kubeconfig, context)
        c = cluster.single.cluster
        return cls(lightkube_client(kubeconfig, context, timeouts), server=c.server,
                   ca_sha256=ca_fingerprint(c.certificate_auth_data, c.certificate_auth), context=cluster.context)

    def identity(self) -> ClusterIdentity:
        """Server, CA and context from the kubeconfig, plus the kube-system namespace's uid when readable."""
        uid = None
        try:
            ns = self._call(self.client.get, Namespace, name="kube-system")
            uid = ns.metadata.uid if ns.metadata else None
        except ApiFailure as err:
            if err.code not in (403, 404):
                raise
        return ClusterIdentity(server=self._where.server, ca_sha256=self._where.ca_sha256, cluster_uid=uid,
                               context=self._where.context)

    def namespace_objects(self, namespace: str) -> list[dict]:
        """The namespace's pods and PodDisruptionBudgets as v1 objects (what the safety gate reads)."""
        def read() -> list[dict]:
            pods = [p.to_dict() for p in self.client.list(Pod, namespace=namespace)]
            pdbs = [p.to_dict() for p in self.client.list(PodDisruptionBudget, namespace=namespace)]
            return pods + pdbs
        return self._call(read)

    def cluster_objects(self) -> list[dict]:
        """The PriorityClasses (a pod's priority may come from its class or the global default)."""
        try:
            return self._call(lambda: [p.to_dict() for p in self.client.list(PriorityClass)])
        except ApiFailure as err:
            if err.code in (403, 404):
                return []
            raise

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ApiError as err:
            code = err.status.code if err.status is not None and err.status.code else err.response.status_code
            if code == 429:
                after = err.response.headers.get("Retry-After", "")
                raise EvictionRefused(_message(err), float(after) if after.isdigit() else None) from None
            raise ApiFailure(int(code or 0), _message(err)) from None
        except httpx2.HTTPStatusError as err:  # an error answer that is not a v1 Status
            raise ApiFailure(err.response.status_code, err.response.text[:200]) from None
        except (httpx2.TransportError, OSError) as err:
            raise NoAnswer(f"{type(err).__name__}: {err}") from None

    def get_pod(self, namespace: str, name: str) -> PodView | None:
        try:
            return _view(self._call(self.client.get, Pod, name=name, namespace=namespace))
        except ApiFailure as err:
            if err.code == 404:
                return None
            raise

    def list_pods(self, namespace: str) -> list[PodView]:
        return self._call(lambda: [_view(p) for p in self.client.list(Pod, namespace=namespace)])

    def evict(self, namespace: str, name: str) -> None:
        body = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace))
        self._call(self.client.create, body, name=name, namespace=namespace)

    def node_unschedulable(self, node: str) -> bool:
        obj = self._call(self.client.get, Node, name=node)
        return bool(obj.spec and obj.spec.unschedulable)

    def set_unschedulable(self, node: str, value: bool) -> None:
        self._call(self.client.patch, Node, node, {"spec": {"unschedulable": value}},
                   patch_type=PatchType.MERGE, field_manager=self.field_manager)
