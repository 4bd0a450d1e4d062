"""Scale-up: the pending pods that still need a node, the options per group, one scale-up per loop.

upstream (core/static_autoscaler.go, core/scaleup/orchestrator): pods that would fit on existing
or upcoming nodes (upcoming = created, not yet Ready, added back as template nodes) are
filtered out first, so a group is not grown twice for the same pods; each remaining group
below its max and not backed off is estimated; the expander picks one option.
"""

from __future__ import annotations

import numpy as np

from kubegpu.simulate.autoscaler.config import AutoscalerConfig
from kubegpu.simulate.autoscaler.estimator import PendingPod, estimate, first_fit
from kubegpu.simulate.autoscaler.expander import Option, best_option
from kubegpu.simulate.nodes import PROVISIONING, ClusterNodes


def filter_out_schedulable(cluster: ClusterNodes, pods: list[PendingPod]) -> list[PendingPod]:
    """Pods that fit neither on existing nodes nor on upcoming ones (first-fit on a forked snapshot)."""
    upcoming = cluster.status == PROVISIONING
    if not upcoming.any():
        return pods
    fork = cluster.state.copy()
    fork.schedulable = fork.schedulable | upcoming
    left = []
    for pod in pods:
        where = first_fit(fork, pod.task, pod.allowed)
        if where is None:
            left.append(pod)
        else:
            fork.place(pod.task, where)
    return left


def scale_up_options(cluster: ClusterNodes, config: AutoscalerConfig, pods: list[PendingPod], now: float) -> list[Option]:
    total = sum(g.target for g in cluster.groups)
    options = []
    for g in cluster.groups:
        if not g.spec.autoscaled or g.backoff_until > now:
            continue
        room = min(g.spec.max - g.target, config.max_nodes_per_scaleup)
        if config.max_nodes_total:
            room = min(room, config.max_nodes_total - total)
        if room <= 0:
            continue
        est = estimate(cluster.state, g.slots.start, pods, room)
        if est.nodes > 0:
            options.append(Option(g, est))
    return options


def choose_scale_up(cluster: ClusterNodes, config: AutoscalerConfig, pods: list[PendingPod], now: float,
                    rng: np.random.Generator) -> Option | None:
    pods = filter_out_schedulable(cluster, pods)
    if not pods:
        return None
    return best_option(scale_up_options(cluster, config, pods, now), config.expander, rng)
