"""The discrete-event engine: jobs arrive, gangs are placed all-or-nothing, preempted, finished;
nodes are created and deleted by the autoscaler; everything in simulated time.

Scheduling follows kube-scheduler's queue: pending pods by priority, then by the time they
(re-)entered the queue; a pod is placed the moment it fits (`PlacementState.fit_mask` + the
scenario's placement policy), else DefaultPreemption may evict lower-priority pods. Jobs of the
same shape, selector and priority share one queue lane: when the lane's head does not fit, no
later one can within the same pass (capacity only shrinks during a pass), so the pass skips it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, mix_from_tasks
from kubegpu.placement.registry import NEEDS_MIX, make_policy
from kubegpu.placement.task import Placement
from kubegpu.simulate import events as ev
from kubegpu.simulate.autoscaler.loop import ClusterAutoscaler
from kubegpu.simulate.nodes import ABSENT, DELETING, PROVISIONING, READY, ClusterNodes, NodeRecord, build_cluster
from kubegpu.simulate.preemption import find_preemption
from kubegpu.simulate.rebalancer import RebalancerSettings, SimRebalancer, stranded_gpus
from kubegpu.simulate.feasibility import check_jobs_fit, num_feasible_nodes_to_find
from kubegpu.simulate.jobstate import (DONE, GONE, PENDING, RUNNING, SAMPLE_INTERVAL, TIMED_OUT, JobRun, Stats,
                                      eviction_loss)
from kubegpu.simulate.karpenter import Karpenter, KarpenterSettings
from kubegpu.simulate.scenario import Scenario
from kubegpu.simulate.workload import BATCH, Job

__all__ = ["DONE", "GONE", "PENDING", "RUNNING", "TIMED_OUT", "Engine", "JobRun", "Stats"]


def workload_mix(jobs: list[Job]) -> ShapeMix:
    """The workload fgd/kubegpu expect: the scenario's own pod shapes, one per pod (as `simulate
    inflation` takes the pod list's); a run without jobs never asks the policy."""
    tasks = [j.task for j in jobs for _ in range(j.pods)]
    return mix_from_tasks(tasks) if tasks else ShapeMix([TaskShape(cpu_milli=0)])


class Engine:
    """One run of a scenario. `run()` returns itself; results are read by `results.summarise`."""

    def __init__(self, scenario: Scenario, jobs: list[Job], *, record_events: bool = False) -> None:
        spec = scenario.spec
        self.scenario = scenario
        self.end = scenario.duration_s
        self.jobs = jobs
        for i, job in enumerate(jobs):
            job.id = i
        self.runs = [JobRun() for _ in jobs]
        self.cluster: ClusterNodes = build_cluster(spec.cluster.node_groups, where=scenario.source)
        self.state = self.cluster.state
        self.policy = make_policy(spec.cluster.scheduler_policy, seed=spec.seed,
                                  mix=workload_mix(jobs) if spec.cluster.scheduler_policy in NEEDS_MIX else None)
        self.rng = np.random.default_rng([spec.seed, 1])
        self.queue = ev.EventQueue()
        self.now = 0.0
        self.lanes: dict[int, list[tuple[float, int]]] = {}
        self.lane_failed_at: dict[int, float] = {}    # last time the lane's head did not fit
        self.lane_failed_pass: dict[int, int] = {}
        self.pass_no = 0
        self.freed: set[int] = set()                     # nodes that gained room since the pass began
        self.pending_pods = 0
        # jobs of one shape, selector and priority share a lane, numbered; lane_prio orders lanes (-priority)
        keys: dict[tuple, int] = {}
        self.lane_of: list[int] = [keys.setdefault((-j.priority.value, j.task, j.pods, j.selector), len(keys))
                                   for j in jobs]
        self.lane_prio: list[int] = [k[0] for k in keys]
        self.starts: dict[tuple[int, int], float] = {}
        self.stats = Stats()
        self.log: list[dict] | None = [] if record_events else None
        self.alloc_milli = 0
        self.ready_gpus = 0
        self._last_t = 0.0
        self._dirty = False
        self._next_start = 0
        self.running_by_priority: dict[int, int] = {}
        self.pod_changes = 0                             # pods started or stopped so far (what-ifs do not count)
        self._serial: dict[str, int] = {}
        check_jobs_fit(self.cluster, jobs)
        self.autoscaler = None
        if scenario.provider == "cluster-autoscaler":
            self.autoscaler = ClusterAutoscaler(self, scenario.autoscaler)
        elif scenario.provider == "karpenter":
            flags = {k: v for k, v in spec.autoscaler.items() if k != "provider"}
            self.autoscaler = Karpenter(self, KarpenterSettings(flags, where=scenario.source))
        self._pod_event_hook = getattr(self.autoscaler, "pod_event", None)
        self.rebalancer = None
        self.stranded: list[float] = []   # sampled when the scenario has a `rebalancer` key (on or off)
        if spec.rebalancer:
            settings = RebalancerSettings.from_spec(spec.rebalancer, where=scenario.source)
            self.rebalancer = SimRebalancer(self, settings) if settings.enabled else None
            self.stranded_size = max((j.task.num_gpu for j in jobs if j.task.gpu_milli >= 1000), default=1)
        for g in self.cluster.groups:
            for _ in range(g.spec.initial):
                self.create_node(g, scale_up=-1, ready_now=True)

    # ---- events -----------------------------------------------------------------------------
    def emit(self, kind: str, **data) -> None:
        if self.log is not None:
            self.log.append({"t": round(self.now, 3), "event": kind, **data})

    def run(self, on_progress: Callable[[float], None] | None = None) -> Engine:
        """Run to the end; `on_progress(simulated seconds)` about every 1 % of the run (a progress bar)."""
        for job in self.jobs:
            self.queue.push(job.submit, ev.ARRIVAL, job.id)
        if self.autoscaler is not None:
            self.queue.push(0.0, ev.AUTOSCALER)
        self.queue.push(0.0, ev.SAMPLE)
        if self.rebalancer is not None:
            self.queue.push(self.rebalancer.cfg.interval_s, ev.REBALANCE)
        handlers = {ev.REBALANCE: self._on_rebalance, ev.JOB_END: self._on_job_end, ev.NODE_DELETE: self._on_node_delete,
                    ev.NODE_READY: self._on_node_ready, ev.ARRIVAL: self._on_arrival,
                    ev.GANG_TIMEOUT: self._on_gang_timeout, ev.AUTOSCALER: self._on_autoscaler,
                    ev.SAMPLE: self._on_sample}
        report_every = self.end / 100
        next_report = report_every
        while self.queue and self.queue.peek_time() < self.end:
            t, kind, _, a, b = self.queue.pop()
            if on_progress is not None and t >= next_report:
                on_progress(t)
                next_report = t + report_every
            self._advance(t)
            handlers[kind](a, b)
            if self._dirty:
                self._dirty = False
                self.schedule_pass()
        self._advance(self.end)
        self._finish()
        return self

    def _advance(self, t: float) -> None:
        dt = t - self._last_t
        if dt > 0:
            self.stats.alloc_gpu_milli_s += dt * self.alloc_milli
            self.stats.ready_gpu_s += dt * self.ready_gpus
            self._last_t = t
        self.now = t

    def _on_arrival(self, job_id: int, _b: int) -> None:
        job = self.jobs[job_id]
        if job.kind != BATCH:
            if job.end <= job.submit:
                self.runs[job_id].status = GONE
                return
            self.queue.push(job.end, ev.JOB_END, job_id, -1)
        self.enqueue(job_id)
        self.emit("submit", job=job.name, pods=job.pods)
        lane = self.lanes[self.lane_of[job_id]]
        if len(lane) == 1:  # nobody of its shape waits before it: try it now
            self.try_lane(self.lane_of[job_id])
        else:  # its lane's head did not fit, so neither does it (capacity has not grown since)
            self.lane_failed_at[self.lane_of[job_id]] = self.now
        if job.scheduling_timeout > 0 and job.pods > 1:
            self.queue.push(job.submit + job.scheduling_timeout, ev.GANG_TIMEOUT, job_id, self.runs[job_id].incarnation)

    def _on_job_end(self, job_id: int, incarnation: int) -> None:
        run, job = self.runs[job_id], self.jobs[job_id]
        if incarnation == -1:  # a service replica is deleted by its controller
            if run.status == RUNNING:
                self._account_useful(job, run)
                self.release(job_id)
            if run.status == PENDING:
                self._record_censored(job, run)
                self.pending_pods -= job.pods
            run.status = GONE
            self.stats.completed[job.cls] = self.stats.completed.get(job.cls, 0) + 1
            self.emit("delete", job=job.name)
            return
        if run.status != RUNNING or run.incarnation != incarnation:
            return
        self.stats.useful_gpu_s += job.gpus * (job.work - run.progress)
        self.release(job_id)
        run.status = DONE
        self.stats.completed[job.cls] = self.stats.completed.get(job.cls, 0) + 1
        self.emit("finish", job=job.name)

    def _on_gang_timeout(self, job_id: int, incarnation: int) -> None:
        run, job = self.runs[job_id], self.jobs[job_id]
        if run.status == PENDING and run.incarnation == incarnation:
            run.status = TIMED_OUT
            self.pending_pods -= job.pods
            self.stats.timed_out[job.cls] = self.stats.timed_out.get(job.cls, 0) + 1
            self._record_censored(job, run)
            self.emit("gang-timeout", job=job.name)

    def _on_node_ready(self, slot: int, _b: int) -> None:
        if self.cluster.status[slot] != PROVISIONING:
            return
        self.cluster.status[slot] = READY
        self.state.schedulable[slot] = True
        self.freed.add(slot)
        self.ready_gpus += int(self.state.gpu_count[slot])
        self.cluster.records[self.cluster.record_of[slot]].ready = self.now
        self.emit("node-ready", node=self.node_name(slot))
        self._dirty = True

    def _on_node_delete(self, slot: int, _b: int) -> None:
        evicted = sorted({key[0] for key in self.cluster.pods_on[slot]})
        for job_id in evicted:
            self.evict(job_id, reason="scale-down")
        self.stats.evictions_by_scale_down += len(evicted)
        rec = self.cluster.records[self.cluster.record_of[slot]]
        rec.deleted = self.now
        self.emit("node-delete", node=rec.name)
        self.cluster.status[slot] = ABSENT
        self.state.schedulable[slot] = False
        self.cluster.record_of[slot] = -1
        if self.autoscaler is not None and hasattr(self.autoscaler, "last_pod_event"):
            self.autoscaler.last_pod_event.pop(slot, None)  # a later node in this slot starts afresh
        self._dirty = True

    def _on_autoscaler(self, _a: int, _b: int) -> None:
        self.autoscaler.run_once(self.now)
        self.queue.push(self.now + self.autoscaler.config.scan_interval, ev.AUTOSCALER)

    def _on_rebalance(self, _a: int, _b: int) -> None:
        self.rebalancer.run_once(self.now)
        self.queue.push(self.now + self.rebalancer.cfg.interval_s, ev.REBALANCE)

    def _on_sample(self, _a: int, _b: int) -> None:
        per_group = np.bincount(self.cluster.group_of[self.cluster.status != ABSENT],
                                minlength=len(self.cluster.groups))
        alive = per_group.tolist()
        self.stats.samples.append((self.now, alive, self.pending_pods, self.alloc_milli / 1000.0))
        if self.scenario.spec.rebalancer:
            self.stranded.append(stranded_gpus(self.state, self.stranded_size))
        if len(self.queue):  # nothing else will ever happen: stop sampling (metrics still run to the end)
            self.queue.push(self.now + SAMPLE_INTERVAL, ev.SAMPLE)

    # ---- nodes --------------------------------------------------------------------------------
    def node_name(self, slot: int) -> str:
        return self.cluster.records[self.cluster.record_of[slot]].name

    def create_node(self, group, *, scale_up: int, ready_now: bool = False) -> int | None:
        slot = self.cluster.free_slot(group)
        if slot is None:
            return None
        serial = self._serial.get(group.name, 0)
        self._serial[group.name] = serial + 1
        reserved = self.cluster.count(group, PROVISIONING, READY, DELETING) < group.spec.reserved
        rec = NodeRecord(name=f"{group.name}-{serial}", group=group.name, created=self.now, scale_up=scale_up,
                         reserved=reserved)
        self.cluster.record_of[slot] = len(self.cluster.records)
        self.cluster.records.append(rec)
        self.cluster.status[slot] = PROVISIONING
        group.target += 1
        if ready_now:
            self._on_node_ready(slot, 0)
            return slot
        if group.spec.provision_failure_rate and self.rng.random() < group.spec.provision_failure_rate:
            rec.failed = True  # never registers; the autoscaler gives up after max-node-provision-time
        else:
            jitter = self.rng.uniform(0.0, group.jitter_s) if group.jitter_s else 0.0
            self.queue.push(self.now + group.provision_s + jitter + group.gpu_lag_s, ev.NODE_READY, slot)
        self.emit("node-create", node=rec.name, group=group.name)
        return slot

    def start_node_deletion(self, slot: int, delay: float) -> None:
        """Taint (no new pods), then drain and delete after `delay` (node-delete-delay-after-taint)."""
        was_ready = self.cluster.status[slot] == READY
        self.cluster.status[slot] = DELETING
        self.state.schedulable[slot] = False
        if was_ready:
            self.ready_gpus -= int(self.state.gpu_count[slot])
        self.cluster.groups[self.cluster.group_of[slot]].target -= 1
        self.emit("node-taint", node=self.node_name(slot))
        self.queue.push(self.now + delay, ev.NODE_DELETE, slot)

    # ---- the scheduling queue ---------------------------------------------------------------------
    def enqueue(self, job_id: int) -> None:
        run = self.runs[job_id]
        run.status = PENDING
        run.queued_at = self.now
        run.incarnation += 1
        self.pending_pods += self.jobs[job_id].pods
        heapq.heappush(self.lanes.setdefault(self.lane_of[job_id], []), (self.now, job_id))

    def _head(self, key: int) -> int | None:
        lane = self.lanes.get(key)
        while lane:
            job_id = lane[0][1]
            if self.runs[job_id].status == PENDING:
                return job_id
            heapq.heappop(lane)
        return None

    def tried(self, job_id: int) -> bool:
        """Failed at least once since it was queued (PodScheduled=False, what cluster-autoscaler looks for)."""
        return self.lane_failed_at.get(self.lane_of[job_id], float("-inf")) >= self.runs[job_id].queued_at

    def _cannot_have_changed(self, key: int, job_id: int, freed: set[int]) -> bool:
        """The head failed in the previous pass and no node that gained room since can take one of its pods
        (every other node only lost room), and it cannot preempt: it would fail again."""
        if self.lane_failed_pass.get(key) != self.pass_no - 1:
            return False
        job = self.jobs[job_id]
        if job.priority.preemption_policy != "Never" and any(
                p < job.priority.value for p, n in self.running_by_priority.items() if n):
            return False
        allowed = self.cluster.allowed(job.selector)
        return not any(allowed[x] and self.state.fits_on(job.task, x) for x in freed)

    def try_lane(self, key: int, freed: set[int] | None = None) -> bool:
        """Try the lane's head; True when it was placed (the lane may continue)."""
        job_id = self._head(key)
        if job_id is None:
            return False
        if not (freed is not None and self._cannot_have_changed(key, job_id, freed)) and self.place(job_id):
            heapq.heappop(self.lanes[key])
            return True
        self.lane_failed_at[key] = self.now
        self.lane_failed_pass[key] = self.pass_no
        return False

    def schedule_pass(self) -> None:
        """Try pending jobs in queue order until every lane's head has failed once."""
        again = True
        while again:
            again = False
            self.pass_no += 1
            freed, self.freed = self.freed, set()
            heads = []
            for key, lane in self.lanes.items():
                j = self._head(key)
                if j is not None:
                    heads.append((self.lane_prio[key], self.runs[j].queued_at, j, key))
            heapq.heapify(heads)
            while heads:
                _, _, _, key = heapq.heappop(heads)
                before = self.stats.preemptions
                if self.try_lane(key, freed):
                    j = self._head(key)
                    if j is not None:
                        heapq.heappush(heads, (self.lane_prio[key], self.runs[j].queued_at, j, key))
                if self.stats.preemptions != before:
                    again = True  # evicted pods freed room: start over from the highest priority
                    break

    def place(self, job_id: int) -> bool:
        """All-or-nothing: every pod of the job placed, with preemption if eligible, or nothing changes."""
        job, run = self.jobs[job_id], self.runs[job_id]
        task, allowed = job.task, self.cluster.allowed(job.selector)
        placed: list[Placement] = []
        for _ in range(job.pods):
            feasible = self.state.fit_mask(task) & allowed
            if not feasible.any():
                if job.priority.preemption_policy == "Never" or not self._preempt_for(job, allowed):
                    break
                feasible = self.state.fit_mask(task) & allowed
                if not feasible.any():
                    break
            where = self.policy.choose(self.state, task, self._nodes_to_score(feasible))
            self.state.place(task, where)
            placed.append(where)
        if len(placed) < job.pods:
            for where in placed:
                self.state.remove(task, where)
            return False
        self._start(job, run, placed)
        return True

    def _nodes_to_score(self, feasible: np.ndarray) -> np.ndarray:
        """The first numFeasibleNodesToFind feasible nodes from where the last cycle stopped (existing nodes)."""
        existing = np.flatnonzero(self.cluster.status != ABSENT)
        n = existing.size
        want = num_feasible_nodes_to_find(n)
        if want >= n:
            return feasible
        start = self._next_start % n
        order = np.concatenate([existing[start:], existing[:start]])
        hits = np.flatnonzero(feasible[order])
        if hits.size <= want:
            self._next_start = start  # every node was processed: upstream advances by n, i.e. stays
            return feasible
        processed = int(hits[want - 1]) + 1
        self._next_start = (start + processed) % n
        out = np.zeros_like(feasible)
        out[order[hits[:want]]] = True
        return out

    def _preempt_for(self, job: Job, allowed: np.ndarray) -> bool:
        if not any(prio < job.priority.value for prio, n in self.running_by_priority.items() if n):
            return False  # no lower-priority pod runs anywhere: "No preemption victims found"
        found = find_preemption(self.state, job.task, allowed, job.priority.value, self.cluster.pods_on, self.jobs,
                                self.starts)
        if found is None:
            return False
        slot, victims = found
        for victim in sorted({key[0] for key in victims}):
            self.stats.preemptions += 1
            self.emit("preempt", job=self.jobs[victim].name, by=job.name, node=self.node_name(slot))
            self.evict(victim, reason="preemption")
        return True

    def _start(self, job: Job, run: JobRun, placed: list[Placement], *, waited: bool = True) -> None:
        """Start the job on `placed`; `waited=False` for a move's replacement on its reserved room (it never
        waited for room, so it adds no wait sample)."""
        restart = run.preemptions > 0 and job.kind == BATCH
        run.status = RUNNING
        run.started = self.now
        run.useful_from = self.now + (job.restart_overhead if restart else 0.0)
        run.placements = [(p.node, p.devices) for p in placed]
        if waited:
            wait = self.now - run.queued_at
            self.stats.waits.setdefault(job.cls, []).extend([wait] * job.pods)
        self.pod_changes += 1
        for member, p in enumerate(placed):
            self._pod_event(p.node)
            self.cluster.pods_on[p.node][(job.id, member)] = p.devices
            self.starts[(job.id, member)] = self.now
        self.alloc_milli += job.pods * job.task.total_gpu_milli
        self.pending_pods -= job.pods
        prio = job.priority.value
        self.running_by_priority[prio] = self.running_by_priority.get(prio, 0) + job.pods
        if job.kind == BATCH:
            self.queue.push(run.useful_from + (job.work - run.progress), ev.JOB_END, job.id, run.incarnation)
        self.emit("start", job=job.name, nodes=[self.node_name(p.node) for p in placed])

    def _pod_event(self, slot: int) -> None:
        """A pod bound to or removed from a node (Karpenter's lastPodEventTime)."""
        if self._pod_event_hook is not None:
            self._pod_event_hook(slot, self.now)

    def release(self, job_id: int) -> None:
        job, run = self.jobs[job_id], self.runs[job_id]
        self.pod_changes += 1
        for member, (node, devices) in enumerate(run.placements):
            self.state.remove(job.task, Placement(node, devices))
            self.freed.add(node)
            self._pod_event(node)
            del self.cluster.pods_on[node][(job_id, member)]
            del self.starts[(job_id, member)]
        self.alloc_milli -= job.pods * job.task.total_gpu_milli
        self.running_by_priority[job.priority.value] -= job.pods
        run.placements = []
        self._dirty = True

    def evict(self, job_id: int, *, reason: str) -> None:
        """The whole job stops (a gang restarts whole) and goes back to the queue; work since the
        last checkpoint is lost, and the restart will cost its overhead again."""
        job, run = self.jobs[job_id], self.runs[job_id]
        if run.status != RUNNING:
            return
        if job.kind == BATCH:
            loss = eviction_loss(job, run, self.now)
            self.stats.lost_work_gpu_s += loss.work_gpu_s
            self.stats.restart_gpu_s += loss.restart_gpu_s
            self.stats.useful_gpu_s += job.gpus * loss.saved_s
            run.progress = run.progress + loss.saved_s if job.checkpoint_interval > 0 else 0.0
        else:
            self._account_useful(job, run)
        run.preemptions += 1
        self.release(job_id)
        self.enqueue(job_id)
        self.emit("evict", job=job.name, reason=reason)

    def _account_useful(self, job: Job, run: JobRun) -> None:
        self.stats.useful_gpu_s += job.gpus * max(0.0, self.now - run.started)

    def _record_censored(self, job: Job, run: JobRun) -> None:
        self.stats.waits.setdefault(job.cls, []).extend([self.now - run.queued_at] * job.pods)

    def pending_jobs(self) -> list[int]:
        """Pending jobs the scheduler found unschedulable, in queue order (what the autoscaler sees)."""
        out = [(self.lane_prio[self.lane_of[j]], self.runs[j].queued_at, j) for lane in self.lanes.values() for _, j in lane
               if self.runs[j].status == PENDING and self.tried(j)]
        return [j for _, _, j in sorted(out)]

    def _finish(self) -> None:
        for job, run in zip(self.jobs, self.runs):
            if run.status == RUNNING:
                if job.kind == BATCH:
                    self.stats.useful_gpu_s += job.gpus * max(0.0, self.end - run.useful_from)
                else:
                    self.stats.useful_gpu_s += job.gpus * (self.end - run.started)
            elif run.status == PENDING:
                self.stats.waits.setdefault(job.cls, []).extend([self.end - run.queued_at] * job.pods)
