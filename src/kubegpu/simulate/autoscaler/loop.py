"""One cluster-autoscaler RunOnce per scan-interval (upstream core/static_autoscaler.go), in order:

1. nodes that did not register within max-node-provision-time are dropped and their group backs
   off (initial 5 m, doubling up to 30 m, reset after 3 h without failures);
2. unschedulable pods: expendable ones (priority < cutoff) and those younger than
   new-pod-scale-up-delay are ignored; if every remaining pod is younger than the hard-coded buffer
   (2 s, 30 s for GPU pods) the loop waits for more and scale-down is forbidden for this loop;
3. scale-up (one option per loop); a scale-up puts scale-down in cooldown but timers still run;
4. scale-down: unneeded timers are updated first, then the cooldown is checked (cluster-wide
   timestamps unless --scale-down-delay-type-local), then nodes unneeded long enough are deleted.
At start the last scale-up/-down times are "an hour ago", so no cooldown applies after a restart.
"""

from __future__ import annotations

import numpy as np

from kubegpu.simulate.autoscaler.config import (UNSCHEDULABLE_POD_TIME_BUFFER, UNSCHEDULABLE_POD_WITH_GPU_TIME_BUFFER,
                                                AutoscalerConfig)
from kubegpu.simulate.autoscaler.estimator import PendingPod
from kubegpu.simulate.autoscaler.scaledown.planner import to_delete, unneeded_nodes
from kubegpu.simulate.autoscaler.scaledown.unneeded import UnneededNodes
from kubegpu.simulate.autoscaler.scaleup import choose_scale_up
from kubegpu.simulate.nodes import PROVISIONING

INITIAL_SCALE_TIME_OFFSET = 3600.0


class ClusterAutoscaler:
    def __init__(self, engine, config: AutoscalerConfig) -> None:
        self.engine = engine
        self.config = config
        self.rng = np.random.default_rng([engine.scenario.spec.seed, 2])
        self.unneeded = UnneededNodes()
        self._unneeded_key: tuple | None = None
        self._unneeded: tuple[list[int], set[int]] = ([], set())
        start = -INITIAL_SCALE_TIME_OFFSET
        self.last_scale_up = start
        self.last_scale_down = start
        self.last_scale_down_fail = start
        self.scale_ups: list[tuple[float, str, int]] = []     # (time, group, nodes)
        self.scale_downs: list[tuple[float, str, int]] = []
        for g in engine.cluster.groups:
            g.last_scale_up = g.last_scale_down = g.last_scale_down_fail = start

    # ---- 1. failed provisioning -------------------------------------------------------------------
    def _drop_unregistered(self, now: float) -> None:
        e, c = self.engine, self.engine.cluster
        for slot in np.flatnonzero(c.status == PROVISIONING).tolist():
            rec = c.records[c.record_of[slot]]
            if rec.created + self.config.max_node_provision_time < now:
                g = c.groups[int(c.group_of[slot])]
                if now - g.last_failure > self.config.node_group_backoff_reset_timeout or g.backoff_s == 0:
                    g.backoff_s = self.config.initial_node_group_backoff_duration
                else:
                    g.backoff_s = min(2 * g.backoff_s, self.config.max_node_group_backoff_duration)
                g.last_failure = now
                g.backoff_until = now + g.backoff_s
                e.emit("provision-timeout", node=rec.name, group=g.name, backoff_s=g.backoff_s)
                e.start_node_deletion(slot, 0.0)

    # ---- 2. pods that need help --------------------------------------------------------------------
    def _unschedulable(self, now: float) -> tuple[list[PendingPod], bool]:
        e, cfg = self.engine, self.config
        pods: list[PendingPod] = []
        all_young = True
        for j in e.pending_jobs():  # pods the scheduler found unschedulable (PodScheduled=False)
            job, run = e.jobs[j], e.runs[j]
            if job.priority.value < cfg.expendable_pods_priority_cutoff:
                continue
            age = now - run.queued_at
            if age < cfg.new_pod_scale_up_delay:
                continue
            buffer = UNSCHEDULABLE_POD_WITH_GPU_TIME_BUFFER if job.task.wants_gpu else UNSCHEDULABLE_POD_TIME_BUFFER
            if age >= buffer:
                all_young = False
            allowed = e.cluster.allowed(job.selector)
            pods.extend(PendingPod(j, job.task, allowed) for _ in range(job.pods))
        return pods, bool(pods) and all_young

    # ---- the loop ------------------------------------------------------------------------------
    def run_once(self, now: float) -> None:
        e, cfg = self.engine, self.config
        self._drop_unregistered(now)
        pods, wait_for_more = self._unschedulable(now)
        scale_down_forbidden = wait_for_more
        if pods and not wait_for_more:
            option = choose_scale_up(e.cluster, cfg, pods, now, self.rng)
            if option is not None:
                self._scale_up(option, now)
        if cfg.scale_down_enabled:
            self._scale_down(now, scale_down_forbidden)

    def _scale_up(self, option, now: float) -> None:
        e = self.engine
        g = option.group
        sid = len(self.scale_ups)
        for _ in range(option.estimate.nodes):
            e.create_node(g, scale_up=sid)
        g.last_scale_up = now
        self.last_scale_up = now
        self.scale_ups.append((now, g.name, option.estimate.nodes))
        e.emit("scale-up", group=g.name, nodes=option.estimate.nodes, pods=len(option.estimate.pods))

    def in_cooldown(self, now: float, forbidden: bool) -> bool:
        cfg = self.config
        if forbidden:
            return True
        if cfg.scale_down_delay_type_local:
            return False  # per-group delays already hid the candidates
        return (now < self.last_scale_up + cfg.scale_down_delay_after_add
                or now < self.last_scale_down_fail + cfg.scale_down_delay_after_failure
                or now < self.last_scale_down + cfg.scale_down_delay_after_delete)

    def _scale_down(self, now: float, forbidden: bool) -> None:
        e, cfg = self.engine, self.config
        # the simulation depends only on the allocation, the node states and (local mode) the cooldowns
        key = (int(e.state.version.sum()), e.cluster.status.tobytes(),
               tuple(now < g.last_scale_up + cfg.scale_down_delay_after_add
                     or now < g.last_scale_down + cfg.scale_down_delay_after_delete
                     or now < g.last_scale_down_fail + cfg.scale_down_delay_after_failure for g in e.cluster.groups)
               if cfg.scale_down_delay_type_local else ())
        if key != self._unneeded_key:
            self._unneeded_key, self._unneeded = key, unneeded_nodes(e.cluster, cfg, e.jobs, now)
        removable, empty = self._unneeded
        self.unneeded.update(removable, now)  # UpdateClusterState runs before the cooldown check
        if self.in_cooldown(now, forbidden):
            return
        ready = [s for s in removable if self.unneeded.long_enough(s, now, cfg.scale_down_unneeded_time)]
        chosen = to_delete(e.cluster, cfg, ready, empty)
        by_group: dict[str, int] = {}
        for slot in chosen:
            g = e.cluster.groups[int(e.cluster.group_of[slot])]
            by_group[g.name] = by_group.get(g.name, 0) + 1
            g.last_scale_down = now
            self.unneeded.drop(slot)
            e.start_node_deletion(slot, cfg.node_delete_delay_after_taint)
        if chosen:
            self.last_scale_down = now
        for name, n in by_group.items():
            self.scale_downs.append((now, name, n))
            e.emit("scale-down", group=name, nodes=n)
