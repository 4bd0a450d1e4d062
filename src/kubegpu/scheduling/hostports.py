"""The host ports a pod claims on its node: what NodePorts compares and the snapshot records per pod."""

from __future__ import annotations

from kubegpu.model.kinds import Pod


def pod_host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) the pod asks for; upstream defaults hostIP to 0.0.0.0."""
    out = []
    for containers in (pod.spec.containers, pod.spec.init_containers):
        for c in containers:
            if not c.ports or (containers is pod.spec.init_containers and c.restart_policy != "Always"):
                continue
            for p in c.ports:
                if p.host_port:
                    out.append((p.host_ip or "0.0.0.0", p.protocol or "TCP", int(p.host_port)))
    return out
