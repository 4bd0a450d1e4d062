"""Top-level Kubernetes kinds kubegpu understands, and the registry that maps `kind` to a struct.

Every struct has `api_version`, `kind`, `metadata`; `ref` is the "Kind/ns/name" string that
errors, findings and JSON output use to name an object.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import msgspec

from kubegpu.model.objects import (
    EventSource,
    HPASpec,
    NetworkPolicySpec,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    ObjectReference,
    PDBSpec,
    PDBStatus,
    PodSpec,
    PodStatus,
    PVCSpec,
    PVCStatus,
    PVSpec,
    PVStatus,
    ServiceSpec,
    TopologySelectorTerm,
    WorkloadSpec,
    WorkloadStatus,
)


class KubeObject(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def ref(self) -> str:
        """'Kind/ns/name' (or 'Kind/name' for cluster-scoped objects)."""
        ns = self.metadata.namespace
        return f"{self.kind}/{ns}/{self.metadata.name}" if ns else f"{self.kind}/{self.metadata.name}"

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    @property
    def annotations(self) -> dict[str, str]:
        return self.metadata.annotations


class Pod(KubeObject, dict=True):
    """dict=True gives each pod a __dict__ (never encoded, not copied by msgspec.structs.replace) so `key`
    is built once per pod: every engine asks for it, ~4.9 million times per doctor run at 20,000 nodes."""

    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @cached_property
    def key(self) -> str:
        """'ns/name', the form kubectl and the why JSON use for pods (metadata is not changed in place)."""
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"

    @property
    def node_name(self) -> str | None:
        return self.spec.node_name or None

    @property
    def is_terminal(self) -> bool:
        return self.status.phase in ("Succeeded", "Failed")

    @property
    def is_bound(self) -> bool:
        return bool(self.spec.node_name)

    @property
    def is_unscheduled(self) -> bool:
        """Waiting for the scheduler: not bound, not finished, not being deleted."""
        return (not self.spec.node_name and not self.is_terminal
                and self.metadata.deletion_timestamp is None)

    @property
    def controller(self):
        """The ownerReference with controller=true, if any."""
        for ref in self.metadata.owner_references:
            if ref.controller:
                return ref
        return None


class Node(KubeObject):
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)

    @property
    def is_ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def reports_not_ready(self) -> bool:
        """A Ready condition is present and not True (False or Unknown); no condition at all is not NotReady."""
        return any(c.type == "Ready" for c in self.status.conditions) and not self.is_ready


class PodDisruptionBudget(KubeObject):
    spec: PDBSpec = msgspec.field(default_factory=PDBSpec)
    status: PDBStatus = msgspec.field(default_factory=PDBStatus)


class PriorityClass(KubeObject):
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str | None = None


class PersistentVolumeClaim(KubeObject):
    spec: PVCSpec = msgspec.field(default_factory=PVCSpec)
    status: PVCStatus = msgspec.field(default_factory=PVCStatus)


class PersistentVolume(KubeObject):
    spec: PVSpec = msgspec.field(default_factory=PVSpec)
    status: PVStatus = msgspec.field(default_factory=PVStatus)


class StorageClass(KubeObject):
    provisioner: str = ""
    parameters: dict[str, str] = {}
    volume_binding_mode: str | None = None
    reclaim_policy: str | None = None
    mount_options: list[str] = []
    allowed_topologies: list[TopologySelectorTerm] = []
    allow_volume_expansion: bool | None = None


class CSINodeDriver(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: dict[str, Any] | None = None


class CSINodeSpec(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    drivers: list[CSINodeDriver] = []


class CSINode(KubeObject):
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class VolumeAttachmentSource(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    persistent_volume_name: str | None = None
    inline_volume_spec: dict[str, Any] | None = None


class VolumeAttachmentSpec(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachment(KubeObject):
    """storage.k8s.io/v1: a volume the attach/detach controller attached (or attaches) to a node;
    NodeVolumeLimits counts it against the driver's limit even when no pod on the node uses it."""

    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)


class Service(KubeObject):
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)

    @property
    def is_headless(self) -> bool:
        return self.spec.cluster_ip == "None"


class Workload(KubeObject):
    """Deployment, StatefulSet, DaemonSet, ReplicaSet or Job: a controller of pods."""

    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class ConfigMap(KubeObject):
    data: dict[str, str] = {}


class NetworkPolicy(KubeObject):
    spec: NetworkPolicySpec = msgspec.field(default_factory=NetworkPolicySpec)


class HorizontalPodAutoscaler(KubeObject):
    spec: HPASpec = msgspec.field(default_factory=HPASpec)


class Namespace(KubeObject):
    pass


class Event(KubeObject):
    """core/v1 Event; events.k8s.io/v1 fields (regarding, note) are mapped on decode."""

    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    regarding: ObjectReference | None = None
    reason: str | None = None
    message: str | None = None
    note: str | None = None
    type: str | None = None
    count: int | None = None
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    event_time: str | None = None
    source: EventSource | None = None

    @property
    def subject(self) -> ObjectReference:
        return self.regarding if self.regarding and self.regarding.name else self.involved_object

    @property
    def text(self) -> str:
        return self.message or self.note or ""


class PodGroupSpec(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    min_member: int | None = None
    min_resources: dict[str, Any] | None = None
    queue: str | None = None
    priority_class_name: str | None = None


class PodGroup(KubeObject):
    """A gang: scheduling.x-k8s.io (coscheduling) or scheduling.volcano.sh PodGroup."""

    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)


class GenericObject(KubeObject):
    """Any other kind (CRDs included): kept with its raw body so checks can read it."""

    body: dict[str, Any] = {}


# kind -> struct. Kinds not listed decode as GenericObject; unknown kinds are never fatal.
KIND_TYPES: dict[str, type[KubeObject]] = {
    "Pod": Pod,
    "Node": Node,
    "PodDisruptionBudget": PodDisruptionBudget,
    "PriorityClass": PriorityClass,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "PersistentVolume": PersistentVolume,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "VolumeAttachment": VolumeAttachment,
    "Service": Service,
    "Deployment": Workload,
    "StatefulSet": Workload,
    "DaemonSet": Workload,
    "ReplicaSet": Workload,
    "Job": Workload,
    "ConfigMap": ConfigMap,
    "NetworkPolicy": NetworkPolicy,
    "HorizontalPodAutoscaler": HorizontalPodAutoscaler,
    "Namespace": Namespace,
    "Event": Event,
    "PodGroup": PodGroup,
}

# Controller kinds that recreate their pods (the rest of the workload kinds are listed by name).
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")


# Kinds whose name is shared with other API groups: only these groups decode as the typed struct
# (a Volcano `batch.volcano.sh` Job is not a batch/v1 Job and stays a GenericObject).
_GROUPS: dict[str, tuple[str, ...]] = {
    "Job": ("batch",),
    "Deployment": ("apps", "extensions"),
    "StatefulSet": ("apps",),
    "DaemonSet": ("apps", "extensions"),
    "ReplicaSet": ("apps", "extensions"),
    "PodGroup": ("scheduling.x-k8s.io", "scheduling.sigs.k8s.io", "scheduling.volcano.sh"),
    "Event": ("", "events.k8s.io"),
}


def struct_for(kind: str, api_version: object) -> type[KubeObject]:
    """The struct that decodes `kind` of `api_version` (GenericObject for unknown kinds/groups)."""
    struct = KIND_TYPES.get(kind, GenericObject)
    groups = _GROUPS.get(kind)
    if groups and isinstance(api_version, str) and api_version:
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        if group not in groups:
            return GenericObject
    return struct
