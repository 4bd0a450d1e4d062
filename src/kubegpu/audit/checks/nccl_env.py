"""Pitfall 5: the NCCL network path of multi-node training, read from pod specs and NetworkPolicies."""

from __future__ import annotations

from typing import Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit
from kubegpu.audit.workloads import GpuWorkload, env_value, has_env
from kubegpu.model.integers import int_or_none
from kubegpu.model.kinds import NetworkPolicy
from kubegpu.model.objects import NetworkPolicyPeer, NetworkPolicyPort, PodSpec
from kubegpu.model.selectors import selector_matches

MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
RDMA_RESOURCE_HINTS = ("rdma", "sriov", "hca", "roce", "infiniband", "efa", "mellanox", "nvidia.com/ib")
EPHEMERAL_PORTS = (32768, 60999)  # Linux net.ipv4.ip_local_port_range default
DEBUG_SWITCHES = ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE")


def _multus(w: GpuWorkload) -> str | None:
    for t in w.templates:
        if t.annotations.get(MULTUS_ANNOTATION):
            return t.annotations[MULTUS_ANNOTATION]
    return next((p.annotations[MULTUS_ANNOTATION] for p in w.pods if p.annotations.get(MULTUS_ANNOTATION)), None)


def no_nccl_debug(ctx: AuditContext) -> Iterator[Hit]:
    """KG-501."""
    for w in ctx.distributed_training:
        if not has_env(w.specs, "NCCL_DEBUG"):
            yield Hit(object=w.ref, message="NCCL_DEBUG is not set: the logs will not show which transport "
                                            "NCCL uses")


def ambiguous_socket_ifname(ctx: AuditContext) -> Iterator[Hit]:
    """KG-502: unset, exclusion-only (`^docker,lo`) or a short prefix that matches many interfaces."""
    min_prefix = int(ctx.param("KG-502", "min_prefix"))
    for w in ctx.distributed_training:
        value = env_value(w.specs, "NCCL_SOCKET_IFNAME")
        networks = _multus(w)
        extra = f" (pods have extra networks: {networks})" if networks else ""
        if value is None and not has_env(w.specs, "NCCL_SOCKET_IFNAME"):
            yield Hit(object=w.ref, message=f"NCCL_SOCKET_IFNAME is not set{extra}: NCCL bootstraps over the "
                                            "first interface that is not lo or docker")
            continue
        if value is None:
            continue  # from a ConfigMap or fieldRef: cannot judge
        items = [i.strip() for i in value.split(",") if i.strip()]
        if value.startswith("^"):
            yield Hit(object=w.ref, message=f"NCCL_SOCKET_IFNAME={value} only excludes interfaces{extra}: NCCL "
                                            "still picks among the rest")
        elif not value.startswith("=") and any(len(i) < min_prefix for i in items):
            yield Hit(object=w.ref, message=f"NCCL_SOCKET_IFNAME={value} is a prefix that matches several "
                                            f"interfaces{extra}; use the exact name (=eth0)")


def _has_rdma(w: GpuWorkload) -> bool:
    for spec in w.specs:
        for c in spec.containers:
            names = [*c.resources.requests, *c.resources.limits]
            if any(h in n.lower() for n in names for h in RDMA_RESOURCE_HINTS):
                return True
    return False


def no_rdma_path(ctx: AuditContext) -> Iterator[Hit]:
    """KG-503: neither an RDMA device nor the host network: NCCL will use TCP over the CNI."""
    for w in ctx.distributed_training:
        if _has_rdma(w) or any(s.host_network for s in w.specs):
            continue
        net = env_value(w.specs, "NCCL_NET")
        if net and net.lower() not in ("socket", "ib"):
            continue  # a net plugin (EFA, TCPX...) with its own device path
        yield Hit(object=w.ref, message=f"{w.replicas} pods exchange gradients with no RDMA device and no "
                                        "hostNetwork: NCCL falls back to NET/Socket over the pod network")


def debug_switches_left(ctx: AuditContext) -> Iterator[Hit]:
    """KG-504."""
    for w in ctx.training:
        for name in DEBUG_SWITCHES:
            value = env_value(w.specs, name)
            if value is not None and value.strip().lower() in ("1", "true", "yes"):
                effect = "InfiniBand/RoCE is off: NCCL uses TCP sockets" if name == "NCCL_IB_DISABLE" \
                    else "NVLink/PCIe peer-to-peer is off: GPU-to-GPU copies go through host memory"
                yield Hit(object=w.ref, message=f"{name}={value} is set: {effect}")


def _peer_is_job(peer: NetworkPolicyPeer, labels: dict[str, str]) -> bool:
    if peer.ip_block is not None:
        return False  # CIDRs: cannot tell whether they cover the pod network
    if peer.pod_selector is None:
        return True  # namespaceSelector alone: every pod of the selected namespaces
    return selector_matches(peer.pod_selector, labels)


def pinned_port_range(w: GpuWorkload) -> tuple[int, int] | None:
    """`net.ipv4.ip_local_port_range` from the pods' securityContext.sysctls, when set."""
    for spec in w.specs:
        ctx = getattr(spec, "security_context", None)
        sysctls = ctx.get("sysctls") if isinstance(ctx, dict) else getattr(ctx, "sysctls", None)
        for item in sysctls or []:
            name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
            value = item.get("value") if isinstance(item, dict) else getattr(item, "value", None)
            if name == "net.ipv4.ip_local_port_range" and value:
                parts = str(value).split()
                low, high = (int_or_none(p, lo=0) for p in parts) if len(parts) == 2 else (None, None)
                if low is not None and high is not None:
                    return low, high
    return None


# Older models of PodSpec do not decode securityContext: then a deliberate port range (endPort) of at
# least `min_range` ports is taken as the pinned ephemeral range.
_SYSCTLS_VISIBLE = "security_context" in getattr(PodSpec, "__struct_fields__", ())


def _all_ports(ports: list[NetworkPolicyPort], ephemeral: tuple[int, int] | None, min_range: int) -> bool:
    """Whether the rule's ports cover NCCL's ephemeral ports (all ports, or a range that holds them)."""
    if not ports:
        return True
    low, high = ephemeral or EPHEMERAL_PORTS
    for p in ports:
        if not isinstance(p.port, int) or p.end_port is None:
            continue
        if p.port <= low and p.end_port >= high:
            return True
        if ephemeral is None and not _SYSCTLS_VISIBLE and p.end_port - p.port + 1 >= min_range:
            return True
    return False


def _describe_ports(ports: list[NetworkPolicyPort]) -> str:
    return ", ".join(f"{p.port}-{p.end_port}" if p.end_port else str(p.port) for p in ports) or "all"


def _policy_types(policy: NetworkPolicy) -> list[str]:
    """upstream defaulting: Ingress always, Egress when egress rules are present."""
    return policy.spec.policy_types or (["Ingress", "Egress"] if policy.spec.egress else ["Ingress"])


def _blocks(policy: NetworkPolicy, labels: dict[str, str], ephemeral: tuple[int, int] | None,
            min_range: int) -> set[str]:
    """The directions ('ingress', 'egress') in which the policy restricts job-to-job ports."""
    out = set()
    for direction, rules in (("ingress", [(r.from_, r.ports) for r in policy.spec.ingress]),
                             ("egress", [(r.to, r.ports) for r in policy.spec.egress])):
        if direction.capitalize() not in _policy_types(policy):
            continue
        if not any((not peers or any(_peer_is_job(p, labels) for p in peers))
                   and _all_ports(ports, ephemeral, min_range) for peers, ports in rules):
            out.add(direction)
    return out


def network_policy_blocks_nccl(ctx: AuditContext) -> Iterator[Hit]:
    """KG-505: policies are additive; the job is blocked when no selecting policy admits all ports."""
    policies = ctx.state.of_kind("NetworkPolicy")
    for w in ctx.distributed_training:
        labels = w.pod_labels[0] if w.pod_labels else {}
        selecting = [p for p in policies if p.namespace == w.namespace
                     and selector_matches(p.spec.pod_selector, labels)]
        ephemeral = pinned_port_range(w)
        min_range = int(ctx.param("KG-505", "min_range"))
        verdicts = {p.name: _blocks(p, labels, ephemeral, min_range) for p in selecting}
        low, high = ephemeral or EPHEMERAL_PORTS
        for direction in ("ingress", "egress"):
            blocking = [p for p in selecting if direction in verdicts[p.name]]
            relevant = [p for p in selecting if direction.capitalize() in _policy_types(p)]
            if blocking and len(blocking) == len(relevant):
                p = blocking[0]
                rules = p.spec.ingress if direction == "ingress" else p.spec.egress
                allowed = "; ".join(_describe_ports(r.ports) for r in rules) or "nothing"
                yield Hit(object=p.ref,
                          message=f"selects the pods of {w.ref} and allows {direction} only on ports "
                                  f"[{allowed}]: NCCL's ephemeral ports {low}-{high} "
                                  "are blocked between workers")
