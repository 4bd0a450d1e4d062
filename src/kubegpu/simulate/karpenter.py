"""A model of Karpenter: provisioning for pending pods and the disruption controller's consolidation.

Settings use the NodePool's own field names under `autoscaler:` (provider: karpenter):
`consolidationPolicy` (WhenEmpty | WhenEmptyOrUnderutilized, default WhenEmptyOrUnderutilized),
`consolidateAfter` (default 0s; "Never" disables), `budgets` (a list of {nodes: "10%" | N}, default 10%).

upstream (pkg/controllers/disruption): the controller polls every 10 s and runs one method per pass,
Emptiness before consolidation; a node is consolidatable once consolidateAfter has passed since its
last pod event (a pod bound to or removed from it; since Initialized when none); a command is
re-validated after 15 s (commandValidationDelay) and dropped if the node no longer qualifies; at
most the budget's share of nodes is disrupted at once. Single-node consolidation here deletes a node
whose pods all fit elsewhere (the cheaper-replacement path is not modelled). Provisioning: pending
pods (older than the 1 s batch idle time) are bin-packed onto new nodes of the cheapest group per pod
(the estimator and the `price` expander), upcoming nodes counted as capacity.
"""

from __future__ import annotations


import numpy as np

from kubegpu.simulate.autoscaler.config import AutoscalerConfig
from kubegpu.simulate.autoscaler.estimator import PendingPod
from kubegpu.simulate.autoscaler.scaledown.planner import unneeded_nodes
from kubegpu.simulate.autoscaler.scaleup import choose_scale_up
from kubegpu.simulate.karpenter_config import KarpenterSettings
from kubegpu.simulate.nodes import READY

POLLING_PERIOD = 10.0
COMMAND_VALIDATION_DELAY = 15.0
BATCH_IDLE_DURATION = 1.0
class Karpenter:
    """Drives provisioning and disruption on the engine every polling period."""

    def __init__(self, engine, settings: KarpenterSettings) -> None:
        self.engine = engine
        self.settings = settings
        # provisioning reuses the estimator with the price expander; scale-down knobs are Karpenter's own
        self.config = AutoscalerConfig(scan_interval=POLLING_PERIOD, expander="price",
                                       scale_down_utilization_threshold=1.0, scale_down_gpu_utilization_threshold=1.0,
                                       scale_down_delay_after_add=0.0, scale_down_delay_after_failure=0.0)
        self.rng = np.random.default_rng([engine.scenario.spec.seed, 3])
        self.scale_ups: list[tuple[float, str, int]] = []
        self.scale_downs: list[tuple[float, str, int]] = []
        self.pending_commands: dict[int, float] = {}   # slot -> time the deletion was decided
        self.last_pod_event: dict[int, float] = {}

    def pod_event(self, slot: int, now: float) -> None:
        self.last_pod_event[slot] = now

    def run_once(self, now: float) -> None:
        self._provision(now)
        self._validate_commands(now)
        if not self.pending_commands:
            self._disrupt(now)

    def _provision(self, now: float) -> None:
        e = self.engine
        pods = [PendingPod(j, e.jobs[j].task, e.cluster.allowed(e.jobs[j].selector))
                for j in e.pending_jobs() if now - e.runs[j].queued_at >= BATCH_IDLE_DURATION
                for _ in range(e.jobs[j].pods)]
        if not pods:
            return
        option = choose_scale_up(e.cluster, self.config, pods, now, self.rng)
        if option is not None:
            sid = len(self.scale_ups)
            for _ in range(option.estimate.nodes):
                e.create_node(option.group, scale_up=sid)
            self.scale_ups.append((now, option.group.name, option.estimate.nodes))
            e.emit("scale-up", group=option.group.name, nodes=option.estimate.nodes, pods=len(option.estimate.pods))

    def _consolidatable(self, slot: int, now: float) -> bool:
        after = self.settings.consolidate_after
        if after is None:
            return False
        since = self.last_pod_event.get(slot)
        if since is None:
            rec = self.engine.cluster.records[self.engine.cluster.record_of[slot]]
            since = rec.ready if rec.ready is not None else rec.created
        return since + after <= now

    def _candidates(self, now: float) -> tuple[list[int], list[int]]:
        """(empty consolidatable nodes, non-empty ones whose pods fit elsewhere)."""
        e = self.engine
        removable, empty = unneeded_nodes(e.cluster, self.config, e.jobs, now)
        ok = [s for s in removable if self._consolidatable(s, now)]
        return [s for s in ok if s in empty], [s for s in ok if s not in empty]

    def _disrupt(self, now: float) -> None:
        e = self.engine
        empty, movable = self._candidates(now)
        total = int((e.cluster.status == READY).sum())
        budget = self.settings.allowed_disruptions(total)
        if empty:  # Emptiness runs first, under every policy
            chosen = empty[:budget]
        elif movable and self.settings.policy == "WhenEmptyOrUnderutilized":
            chosen = movable[:min(1, budget)]  # single-node consolidation: one node per command
        else:
            return
        for slot in chosen:
            self.pending_commands[slot] = now
            e.emit("disruption-command", node=e.node_name(slot))

    def _validate_commands(self, now: float) -> None:
        e = self.engine
        due = [s for s, t in self.pending_commands.items() if t + COMMAND_VALIDATION_DELAY <= now]
        if not due:
            return
        empty, movable = self._candidates(now)
        still = set(empty) | (set(movable) if self.settings.policy == "WhenEmptyOrUnderutilized" else set())
        by_group: dict[str, int] = {}
        for slot in due:
            del self.pending_commands[slot]
            if slot not in still:
                e.emit("disruption-cancelled", node=e.node_name(slot))
                continue
            g = e.cluster.groups[int(e.cluster.group_of[slot])]
            by_group[g.name] = by_group.get(g.name, 0) + 1
            e.start_node_deletion(slot, 0.0)
        for name, n in by_group.items():
            self.scale_downs.append((now, name, n))
            e.emit("scale-down", group=name, nodes=n)
