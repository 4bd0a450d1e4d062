"""The unit of placement: one pod's request, and where it went.

A `Task` is what every placement policy sees of a pod: CPU, memory, and a GPU demand of
`num_gpu` devices with `gpu_milli` (1..1000) of each, optionally pinned to GPU models. It is
deliberately smaller than a Pod so that traces (Alibaba CSV rows) and live pods meet on it.
"""

from __future__ import annotations

import msgspec

from kubegpu.model.gpu import MILLI, GpuDemand  # MILLI re-exported: the one milli-GPU unit


class Task(msgspec.Struct, frozen=True, kw_only=True):
    """One pod's request as placement sees it.

    `gpu_milli` is per device: a fractional (shared) pod has num_gpu=1 and gpu_milli<1000;
    whole-GPU pods have gpu_milli=1000; CPU-only pods 0/0. `models` None means any GPU model.
    """

    cpu_milli: int
    mem_bytes: int = 0
    num_gpu: int = 0
    gpu_milli: int = 0
    models: frozenset[str] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.num_gpu < 0 or self.gpu_milli < 0 or self.gpu_milli > MILLI:
            raise ValueError(f"task {self.name!r}: num_gpu/gpu_milli out of range "
                             f"({self.num_gpu} x {self.gpu_milli}m)")
        if (self.num_gpu == 0) != (self.gpu_milli == 0):
            raise ValueError(f"task {self.name!r}: num_gpu and gpu_milli must be both zero or both set")

    @classmethod
    def from_demand(cls, requests: dict[str, int], demand: GpuDemand, name: str = "") -> "Task":
        """A pod's requests and physical GPU demand (`GpuDemand`) as a task: the one way a pod becomes
        a task (frag, the simulator's cluster source, the extender)."""
        num, milli = (demand.num_gpu, demand.gpu_milli) if demand.num_gpu > 0 and demand.gpu_milli > 0 else (0, 0)
        return cls(cpu_milli=int(requests.get("cpu", 0)), mem_bytes=int(requests.get("memory", 0)), num_gpu=num,
                   gpu_milli=min(milli, MILLI), models=demand.models, name=name)

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def wants_gpu(self) -> bool:
        return self.num_gpu > 0

    @property
    def is_shared(self) -> bool:
        """A fractional pod: one device, part of it."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI

    @property
    def shape_key(self) -> tuple[int, int, int, frozenset[str] | None]:
        """What the fragmentation measure (and node-local scores) depend on: memory is not part of it."""
        return (self.cpu_milli, self.num_gpu, self.gpu_milli, self.models)


class Placement(msgspec.Struct, frozen=True):
    """Where a task goes: a node index and the device indices on it (empty for CPU-only tasks)."""

    node: int
    devices: tuple[int, ...] = ()
