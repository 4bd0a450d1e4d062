"""Typed Kubernetes objects: only the fields kubegpu's engines read.

These are msgspec Structs decoded straight from the v1 wire format (what `kubectl get -o json`
and the API server return), so a dump and a live cluster produce identical models. Fields we
do not read are dropped at decode time; that keeps 50k pods cheap in memory. Quantities stay
as written (str or number) and are parsed once, with the object's name, by `model.resources`.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

Quantity = Union[str, int, float]
ResourceList = dict[str, Quantity]


class _Obj(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base for every nested v1 struct: camelCase on the wire, absent fields default."""


# ---------------------------------------------------------------- metadata

class OwnerReference(_Obj):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_Obj):
    name: str = ""
    namespace: str | None = None
    uid: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    generate_name: str | None = None
    resource_version: str | None = None


class LabelSelectorRequirement(_Obj):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_Obj):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


# ---------------------------------------------------------------- scheduling terms

class NodeSelectorRequirement(_Obj):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(_Obj):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Obj):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Obj):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Obj):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Obj):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Obj):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Obj):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Obj):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Obj):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Taint(_Obj):
    key: str
    value: str | None = None
    effect: str = ""
    time_added: str | None = None

    @property
    def text(self) -> str:
        """`key=value:Effect`, or `key:Effect` without a value: the taint as `kubectl taint` writes it."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class TopologySpreadConstraint(_Obj):
    max_skew: int = 1
    topology_key: str = ""
    when_unsatisfiable: str = "DoNotSchedule"
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


# ---------------------------------------------------------------- containers

class ResourceRequirements(_Obj):
    requests: ResourceList = {}
    limits: ResourceList = {}


class ContainerPort(_Obj):
    container_port: int = 0
    host_port: int | None = None
    protocol: str = "TCP"
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    name: str | None = None


class EnvVar(_Obj):
    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class VolumeMount(_Obj):
    name: str
    mount_path: str = ""
    read_only: bool | None = None
    sub_path: str | None = None


class Probe(_Obj):
    initial_delay_seconds: int | None = None
    period_seconds: int | None = None
    failure_threshold: int | None = None
    exec: dict[str, Any] | None = None
    http_get: dict[str, Any] | None = None
    tcp_socket: dict[str, Any] | None = None


class Container(_Obj):
    name: str = ""
    image: str | None = None
    command: list[str] = []
    args: list[str] = []
    env: list[EnvVar] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = []
    volume_mounts: list[VolumeMount] = []
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar
    startup_probe: Probe | None = None
    readiness_probe: Probe | None = None


# ---------------------------------------------------------------- volumes

class PVCSource(_Obj):
    claim_name: str
    read_only: bool | None = None


class NFSSource(_Obj):
    server: str = ""
    path: str = ""
    read_only: bool | None = None


class Volume(_Obj):
    name: str
    persistent_volume_claim: PVCSource | None = None
    empty_dir: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None
    nfs: NFSSource | None = None
    config_map: dict[str, Any] | None = None
    secret: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    projected: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    cephfs: dict[str, Any] | None = None


# ---------------------------------------------------------------- pod

class PodDNSConfigOption(_Obj):
    name: str = ""
    value: str | None = None


class PodDNSConfig(_Obj):
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[PodDNSConfigOption] = []


class PodSchedulingGate(_Obj):
    name: str


class PodSpec(_Obj):
    containers: list[Container] = []
    init_containers: list[Container] = []
    node_name: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    overhead: ResourceList = {}
    volumes: list[Volume] = []
    host_network: bool = False
    dns_policy: str | None = None
    dns_config: PodDNSConfig | None = None
    scheduler_name: str | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    service_account_name: str | None = None
    restart_policy: str | None = None
    scheduling_gates: list[PodSchedulingGate] = []
    hostname: str | None = None
    subdomain: str | None = None
    termination_grace_period_seconds: int | None = None
    security_context: dict[str, Any] | None = None
    resource_claims: list[dict[str, Any]] = []  # DRA claims; DynamicResources reads them
    resources: "ResourceRequirements | None" = None  # pod-level resources (KEP-2837)


class PodCondition(_Obj):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class ContainerStatus(_Obj):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    state: dict[str, Any] = {}
    image: str | None = None


class PodIPEntry(_Obj):
    """v1 PodIP / HostIP: one address of a pod or its host."""

    ip: str = ""


class PodStatus(_Obj):
    phase: str | None = None
    conditions: list[PodCondition] = []
    nominated_node_name: str | None = None
    start_time: str | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    host_ips: list[PodIPEntry] = msgspec.field(default_factory=list, name="hostIPs")
    pod_ip: str | None = msgspec.field(default=None, name="podIP")
    pod_ips: list[PodIPEntry] = msgspec.field(default_factory=list, name="podIPs")
    qos_class: str | None = None
    reason: str | None = None
    message: str | None = None
    container_statuses: list[ContainerStatus] = []


class PodTemplateSpec(_Obj):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


# ---------------------------------------------------------------- node

class NodeSpec(_Obj):
    unschedulable: bool = False
    taints: list[Taint] = []
    provider_id: str | None = msgspec.field(default=None, name="providerID")
    pod_cidr: str | None = msgspec.field(default=None, name="podCIDR")
    pod_cidrs: list[str] = msgspec.field(default_factory=list, name="podCIDRs")


class NodeCondition(_Obj):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None


class NodeAddress(_Obj):
    type: str = ""
    address: str = ""


class NodeSystemInfo(_Obj):
    kubelet_version: str | None = None
    container_runtime_version: str | None = None
    os_image: str | None = None
    kernel_version: str | None = None
    architecture: str | None = None


class AttachedVolume(_Obj):
    name: str = ""
    device_path: str | None = None


class NodeStatus(_Obj):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    conditions: list[NodeCondition] = []
    addresses: list[NodeAddress] = []
    node_info: NodeSystemInfo | None = None
    volumes_in_use: list[str] = []
    volumes_attached: list[AttachedVolume] = []


# ---------------------------------------------------------------- storage

class ObjectReference(_Obj):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None


class PVCSpec(_Obj):
    access_modes: list[str] = []
    storage_class_name: str | None = None
    volume_name: str | None = None
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    volume_mode: str | None = None
    selector: LabelSelector | None = None


class PVCStatus(_Obj):
    phase: str | None = None
    access_modes: list[str] = []
    capacity: ResourceList = {}


class VolumeNodeAffinity(_Obj):
    required: NodeSelector | None = None


class PVSpec(_Obj):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    storage_class_name: str | None = None
    claim_ref: ObjectReference | None = None
    node_affinity: VolumeNodeAffinity | None = None
    nfs: NFSSource | None = None
    csi: dict[str, Any] | None = None
    local: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None
    cephfs: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    mount_options: list[str] = []
    persistent_volume_reclaim_policy: str | None = None
    volume_mode: str | None = None


class PVStatus(_Obj):
    phase: str | None = None


class TopologySelectorRequirement(_Obj):
    key: str = ""
    values: list[str] = []


class TopologySelectorTerm(_Obj):
    match_label_expressions: list[TopologySelectorRequirement] = []


# ---------------------------------------------------------------- services, network

class ServicePort(_Obj):
    name: str | None = None
    port: int = 0
    target_port: int | str | None = None
    protocol: str = "TCP"
    node_port: int | None = None


class ServiceSpec(_Obj):
    type: str = "ClusterIP"
    cluster_ip: str | None = msgspec.field(default=None, name="clusterIP")
    selector: dict[str, str] = {}
    ports: list[ServicePort] = []
    session_affinity: str | None = None
    publish_not_ready_addresses: bool | None = None


class NetworkPolicyPort(_Obj):
    port: int | str | None = None
    protocol: str | None = None
    end_port: int | None = None


class NetworkPolicyPeer(_Obj):
    pod_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    ip_block: dict[str, Any] | None = None


class NetworkPolicyIngressRule(_Obj):
    from_: list[NetworkPolicyPeer] = msgspec.field(default_factory=list, name="from")
    ports: list[NetworkPolicyPort] = []


class NetworkPolicyEgressRule(_Obj):
    to: list[NetworkPolicyPeer] = []
    ports: list[NetworkPolicyPort] = []


class NetworkPolicySpec(_Obj):
    pod_selector: LabelSelector = msgspec.field(default_factory=LabelSelector)
    policy_types: list[str] = []
    ingress: list[NetworkPolicyIngressRule] = []
    egress: list[NetworkPolicyEgressRule] = []


# ---------------------------------------------------------------- workloads

class WorkloadSpec(_Obj):
    """The union of the spec fields of Deployment, StatefulSet, DaemonSet, ReplicaSet and Job."""

    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    service_name: str | None = None           # StatefulSet
    pod_management_policy: str | None = None  # StatefulSet
    parallelism: int | None = None            # Job
    completions: int | None = None            # Job
    backoff_limit: int | None = None          # Job
    suspend: bool | None = None               # Job
    strategy: dict[str, Any] | None = None    # Deployment
    update_strategy: dict[str, Any] | None = None


class WorkloadStatus(_Obj):
    replicas: int | None = None
    ready_replicas: int | None = None
    available_replicas: int | None = None
    updated_replicas: int | None = None
    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    number_ready: int | None = None
    desired_number_scheduled: int | None = None


class PDBSpec(_Obj):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PDBStatus(_Obj):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0


class CrossVersionObjectReference(_Obj):
    kind: str = ""
    name: str = ""
    api_version: str | None = None


class HPASpec(_Obj):
    scale_target_ref: CrossVersionObjectReference = msgspec.field(default_factory=CrossVersionObjectReference)
    min_replicas: int | None = None
    max_replicas: int = 0


class EventSource(_Obj):
    component: str | None = None
    host: str | None = None
