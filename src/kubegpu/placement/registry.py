"""Every placement policy by its CLI name — the one place that lists them.

Used by `kubegpu simulate inflation` (the `--policy` names) and the simulator's scenario
`scheduler_policy` (`simulate/engine.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from kubegpu.errors import UsageError
from kubegpu.placement.measure import ShapeMix
from kubegpu.placement.policies.base import PlacementPolicy
from kubegpu.placement.policies.best_fit import BestFit
from kubegpu.placement.policies.dot_product import DotProduct
from kubegpu.placement.policies.fgd import FGD
from kubegpu.placement.policies.gpu_clustering import GpuClustering
from kubegpu.placement.policies.gpu_packing import GpuPacking
from kubegpu.placement.policies.kubegpu import KubegpuPolicy
from kubegpu.placement.policies.node_resources_fit import LeastAllocated, MostAllocated
from kubegpu.placement.policies.random_fit import RandomFit


def _needs_mix(cls: type) -> Callable[[ShapeMix | None, int | None], PlacementPolicy]:
    def build(mix: ShapeMix | None, seed: int | None) -> PlacementPolicy:
        if mix is None:
            raise UsageError(f"policy {cls.name!r} needs a task-shape mix (the workload it expects)")
        return cls(mix)
    return build


POLICIES: dict[str, Callable[[ShapeMix | None, int | None], PlacementPolicy]] = {
    "random": lambda mix, seed: RandomFit(seed),
    "dotprod": lambda mix, seed: DotProduct(),
    "gpu-clustering": lambda mix, seed: GpuClustering(),
    "gpu-packing": lambda mix, seed: GpuPacking(),
    "bestfit": lambda mix, seed: BestFit(),
    "fgd": _needs_mix(FGD),
    "least-allocated": lambda mix, seed: LeastAllocated(),
    "most-allocated": lambda mix, seed: MostAllocated(),
    "kubegpu": _needs_mix(KubegpuPolicy),
}

# The six policies of the FGD paper, in the paper's order, with the labels of its result files.
PAPER_POLICIES: dict[str, str] = {
    "random": "01-Random",
    "dotprod": "02-DotProd",
    "gpu-clustering": "03-GpuClustering",
    "gpu-packing": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}
POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)
# Policies that score against the workload they expect (a ShapeMix): make_policy needs `mix`.
NEEDS_MIX: frozenset[str] = frozenset({"fgd", "kubegpu"})


def make_policy(name: str, *, mix: ShapeMix | None = None, seed: int | None = None) -> PlacementPolicy:
    """A fresh policy instance (policies may keep caches and RNG state: one per run)."""
    try:
        build = POLICIES[name]
    except KeyError:
        raise UsageError(f"unknown policy {name!r}; choose from {', '.join(POLICY_NAMES)}") from None
    return build(mix, seed)
