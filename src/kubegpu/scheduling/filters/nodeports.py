"""NodePorts: a requested hostPort must be free on the node. Unschedulable (preemption can free it).

upstream HostPortInfo: two ports conflict on the same protocol and port when either binds
0.0.0.0 or both bind the same IP (an empty hostIP means 0.0.0.0, an empty protocol TCP; port 0
asks for nothing). PreFilter skips pods without host ports (containers and sidecar init
containers, upstream GetHostPorts).

Vectorised: once per cycle, every bound pod's host ports become one flat table (pod slot,
protocol/port code, hostIP code); Filter then marks the entries that clash with the pod's own
ports in one numpy pass and scatters them onto nodes. `ports_conflict` stays as the plain
reading of the rule (the test oracle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status
from kubegpu.scheduling.hostports import pod_host_ports

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD = "0.0.0.0"


def ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    (ip_a, proto_a, port_a), (ip_b, proto_b, port_b) = a, b
    if proto_a != proto_b or port_a != port_b:
        return False
    return ip_a == ip_b or WILDCARD in (ip_a, ip_b)


@dataclass(frozen=True)
class _PortTable:
    """Host ports of the bound pods in slots [0, slots): one row per (pod, port)."""

    slots: int
    slot: np.ndarray       # int64 pod slot per row
    proto_port: np.ndarray  # object "TCP/8080" per row
    ip: np.ndarray          # object hostIP per row


def _port_table(snapshot) -> _PortTable:
    slot, proto_port, ip = [], [], []
    n = snapshot.slot_count
    for s in range(n):
        for host_ip, proto, port in pod_host_ports(snapshot.pod_at(s)):
            slot.append(s)
            proto_port.append(f"{proto}/{port}")
            ip.append(host_ip)
    return _PortTable(n, np.asarray(slot, dtype=np.int64), np.asarray(proto_port, dtype=object),
                      np.asarray(ip, dtype=object))


def _table_for(ctx: CycleContext, snapshot) -> _PortTable:
    """The port table of `snapshot`, built once per cycle (slots are append-only, so the
    table stays right until a pod is added; removed pods are masked out at Filter time)."""
    key = (NAME, id(snapshot))
    held = ctx.data.get(key)  # (snapshot, table): holding the snapshot keeps its id unique
    if held is None or held[0] is not snapshot or held[1].slots != snapshot.slot_count:
        held = ctx.data[key] = (snapshot, _port_table(snapshot))
    return held[1]


def _clashes(wanted: list[tuple[str, str, int]], proto_port: np.ndarray, ip: np.ndarray) -> np.ndarray:
    """bool per used port: it clashes with one of the pod's wanted ports."""
    out = np.zeros(len(proto_port), dtype=bool)
    for w_ip, w_proto, w_port in wanted:
        same = proto_port == f"{w_proto}/{w_port}"
        out |= same if w_ip == WILDCARD else same & ((ip == w_ip) | (ip == WILDCARD))
    return out


class NodePortsFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None if ctx.info.host_ports else Status(Code.SKIP)

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        wanted = ctx.info.host_ports
        snap = view.snapshot
        table = _table_for(ctx, snap)
        visible = snap.visible_slots(view)
        rows = visible[table.slot] & _clashes(wanted, table.proto_port, table.ip)
        failed = np.zeros(len(snap.nodes), dtype=bool)
        failed[snap.pod_node[table.slot[rows]]] = True
        for i, infos in view.extra.items():  # nominated pods and gang siblings: few
            if not failed[i]:
                failed[i] = any(ports_conflict(w, u) for info in infos for u in info.host_ports for w in wanted)
        return NodeStatuses.where(failed[idx], Code.UNSCHEDULABLE, (ERR_REASON,))
