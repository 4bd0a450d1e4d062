"""Expanders: which node group to grow when several could help (upstream pkg/expander/*).

A chain like "priority,least-waste" narrows the options with each expander in turn; remaining
ties are broken at random (seeded). `least-waste` has no GPU term (waste/waste.go); `price`
gives groups with GPUs an unfitness of 1000 for pods that ask for no GPU (price/price.go) and
otherwise prefers the lowest price per helped pod (a simplification of upstream's
preferred-node price ratio, which needs cloud pricing models).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.simulate.autoscaler.estimator import Estimate
from kubegpu.simulate.nodes import NodeGroup

GPU_UNFITNESS = 1000.0


@dataclass
class Option:
    group: NodeGroup
    estimate: Estimate


def _least_waste(o: Option) -> float:
    cpu = o.group.cpu_milli * o.estimate.nodes
    mem = o.group.mem_bytes * o.estimate.nodes
    return (cpu - o.estimate.cpu_milli) / max(cpu, 1) + (mem - o.estimate.mem_bytes) / max(mem, 1)


def _price(o: Option) -> float:
    cost = o.group.spec.price_per_hour * o.estimate.nodes / max(len(o.estimate.pods), 1)
    if o.group.gpus and not any(p.task.wants_gpu for p in o.estimate.pods):
        cost *= GPU_UNFITNESS
    return cost


# expander -> score to minimise
SCORES = {
    "least-waste": _least_waste,
    "most-pods": lambda o: -len(o.estimate.pods),
    "priority": lambda o: -o.group.spec.expander_priority,
    "price": _price,
    "random": lambda o: 0.0,
}


def best_option(options: list[Option], chain: str, rng: np.random.Generator) -> Option | None:
    for name in chain.split(","):
        if len(options) <= 1:
            break
        score = SCORES[name]
        values = [score(o) for o in options]
        best = min(values)
        options = [o for o, v in zip(options, values) if v <= best + 1e-12]
    if not options:
        return None
    return options[int(rng.integers(len(options)))] if len(options) > 1 else options[0]
