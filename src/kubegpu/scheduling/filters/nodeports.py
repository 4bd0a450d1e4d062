"""NodePorts: a requested hostPort must be free on the node. Unschedulable (preemption can free it).

upstream HostPortInfo: two ports conflict on the same protocol and port when either binds
0.0.0.0 or both bind the same IP.
"""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD = "0.0.0.0"


def ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    (ip_a, proto_a, port_a), (ip_b, proto_b, port_b) = a, b
    if proto_a != proto_b or port_a != port_b:
        return False
    return ip_a == ip_b or WILDCARD in (ip_a, ip_b)


class NodePortsFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None if ctx.info.host_ports else Status(Code.SKIP)

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        wanted = ctx.info.host_ports
        failed = np.zeros(len(idx), dtype=bool)
        for k, i in enumerate(idx):
            used = [p for info in view.infos_on(int(i)) for p in info.host_ports]
            failed[k] = any(ports_conflict(w, u) for w in wanted for u in used)
        return NodeStatuses.where(failed, Code.UNSCHEDULABLE, (ERR_REASON,))
