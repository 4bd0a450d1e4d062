"""Deterministic placement of CPU-only pods: the least-requested CPU node first, as the
default LeastAllocated score would pick, ties broken by node order."""

from __future__ import annotations

from kubegpu.model.quantity import resource_amount


class CpuPlacer:
    """Hands out CPU nodes for CPU-only pods, tracking the CPU and memory already requested."""

    def __init__(self, nodes: list[dict], daemon_cpu_milli: int = 0, daemon_memory: int = 0) -> None:
        self._alloc = {n["metadata"]["name"]: (resource_amount("cpu", n["status"]["allocatable"]["cpu"]),
                                               resource_amount("memory", n["status"]["allocatable"]["memory"]))
                       for n in nodes if "nvidia.com/gpu" not in n["status"]["allocatable"]}
        self._order = list(self._alloc)
        self._used = {name: [daemon_cpu_milli, daemon_memory] for name in self._order}

    def place(self, cpu: str, memory: str) -> str:
        """The node with the lowest requested share of CPU and memory that still fits the pod."""
        want_cpu, want_mem = resource_amount("cpu", cpu), resource_amount("memory", memory)

        def share(name: str) -> float:
            (acpu, amem), (ucpu, umem) = self._alloc[name], self._used[name]
            return (ucpu / acpu + umem / amem) / 2

        for name in sorted(self._order, key=lambda n: (share(n), self._order.index(n))):
            (acpu, amem), used = self._alloc[name], self._used[name]
            if used[0] + want_cpu <= acpu and used[1] + want_mem <= amem:
                used[0] += want_cpu
                used[1] += want_mem
                return name
        raise RuntimeError(f"demo scenario bug: no CPU node fits cpu={cpu} memory={memory}")
