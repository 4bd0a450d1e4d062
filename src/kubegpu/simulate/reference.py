"""A small plain-Python reference engine: the test oracle for `engine.Engine` (and the benchmark's
baseline). It is deliberately naive: lists and loops, a full queue scan after every event, no
lanes, no numpy, no caches. It covers the scheduling core only (fixed nodes, no autoscaler):
queue order, all-or-nothing gangs, the least-/most-allocated scores, DefaultPreemption's victim
choice, checkpoint-bounded lost work. Tests assert it writes the same event log as the engine.
It is an independent re-statement for cross-checking, never used by `kubegpu simulate run`.
"""

from __future__ import annotations

import math

from kubegpu.simulate.nodes import build_cluster, matches
from kubegpu.simulate.scenario import Scenario
from kubegpu.simulate.workload import BATCH, Job

_END, _ARRIVAL, _TIMEOUT = 0, 3, 4


class RefNode:
    def __init__(self, name: str, group, cpu: int, mem: int, gpus: int, max_pods: int) -> None:
        self.name, self.group = name, group
        self.cpu_alloc, self.mem_alloc, self.pods_alloc = cpu, mem, max_pods
        self.cpu, self.mem, self.pods = cpu, mem, max_pods
        self.dev = [1000] * gpus
        self.dev_total = [1000] * gpus
        self.model = group.spec.gpu_model


def _fits(node: RefNode, job: Job) -> bool:
    t = job.task
    if node.cpu < t.cpu_milli or node.mem < t.mem_bytes or node.pods < 1:
        return False
    if t.num_gpu:
        if t.models is not None and node.model not in t.models:
            return False
        return sum(1 for d in node.dev if d >= t.gpu_milli) >= t.num_gpu
    return True


def _devices(node: RefNode, job: Job) -> list[int]:
    t = job.task
    if not t.num_gpu:
        return []
    if t.num_gpu == 1 and t.gpu_milli < 1000:  # best fit: least free share, lowest index
        fits = [(d, i) for i, d in enumerate(node.dev) if d >= t.gpu_milli]
        return [min(fits)[1]]
    return [i for i, d in enumerate(node.dev) if d >= t.gpu_milli][:t.num_gpu]


def _score(node: RefNode, job: Job, most: bool) -> int:
    t = job.task
    total = weights = 0
    for cap, free, ask in ((node.cpu_alloc, node.cpu, t.cpu_milli), (node.mem_alloc, node.mem, t.mem_bytes),
                           (sum(node.dev_total), sum(node.dev), t.num_gpu * t.gpu_milli)):
        if cap <= 0:
            continue
        req = cap - free + ask
        total += (min(req, cap) * 100 // cap) if most else (max(cap - req, 0) * 100 // cap)
        weights += 1
    return total // weights if weights else 0


class ReferenceEngine:
    def __init__(self, scenario: Scenario, jobs: list[Job]) -> None:
        policy = scenario.spec.cluster.scheduler_policy
        if policy not in ("least-allocated", "most-allocated"):
            raise ValueError("the reference engine knows least-allocated and most-allocated only")
        self.most = policy == "most-allocated"
        self.end = scenario.duration_s
        self.jobs = jobs
        for i, j in enumerate(jobs):
            j.id = i
        self.nodes: list[RefNode] = []
        for g in build_cluster(scenario.spec.cluster.node_groups, where=scenario.source).groups:
            for k in range(g.spec.initial):
                self.nodes.append(RefNode(f"{g.name}-{k}", g, g.cpu_milli, g.mem_bytes, g.gpus, g.spec.max_pods))
        self.events: list[tuple] = []
        self.seq = 0
        self.now = 0.0
        self.log: list[dict] = []
        self.status = ["new"] * len(jobs)
        self.queued = [0.0] * len(jobs)
        self.incarnation = [0] * len(jobs)
        self.placement: list[list[tuple[int, list[int]]]] = [[] for _ in jobs]
        self.started = [0.0] * len(jobs)
        self.useful_from = [0.0] * len(jobs)
        self.progress = [0.0] * len(jobs)
        self.restarts = [0] * len(jobs)
        self.lost_work_gpu_s = 0.0
        self.waits: list[float] = []

    def push(self, t: float, kind: int, a: int, b: int = 0) -> None:
        self.events.append((t, kind, self.seq, a, b))
        self.seq += 1

    def emit(self, kind: str, **data) -> None:
        self.log.append({"t": round(self.now, 3), "event": kind, **data})

    def run(self) -> ReferenceEngine:
        for n in self.nodes:
            self.now = 0.0
            self.emit("node-ready", node=n.name)
        for j in self.jobs:
            self.push(j.submit, _ARRIVAL, j.id)
        while self.events:
            ev = min(self.events)
            if ev[0] >= self.end:
                break
            self.events.remove(ev)
            self.now, kind, _, a, b = ev
            if kind == _ARRIVAL:
                job = self.jobs[a]
                if job.kind != BATCH:
                    if job.end <= job.submit:
                        self.status[a] = "gone"
                        continue
                    self.push(job.end, _END, a, -1)
                self.queue(a)
                self.emit("submit", job=job.name, pods=job.pods)
                if job.scheduling_timeout > 0 and job.pods > 1:
                    self.push(job.submit + job.scheduling_timeout, _TIMEOUT, a, self.incarnation[a])
            elif kind == _END:
                self.on_end(a, b)
            elif kind == _TIMEOUT and self.status[a] == "pending" and self.incarnation[a] == b:
                self.status[a] = "timed-out"
                self.waits.extend([self.now - self.queued[a]] * self.jobs[a].pods)
                self.emit("gang-timeout", job=self.jobs[a].name)
            self.schedule()
        self.waits.extend(self.end - self.queued[j] for j in range(len(self.jobs)) if self.status[j] == "pending"
                          for _ in range(self.jobs[j].pods))
        return self

    def queue(self, j: int) -> None:
        self.status[j] = "pending"
        self.queued[j] = self.now
        self.incarnation[j] += 1

    def on_end(self, j: int, inc: int) -> None:
        job = self.jobs[j]
        if inc == -1:
            if self.status[j] == "running":
                self.release(j)
            elif self.status[j] == "pending":
                self.waits.extend([self.now - self.queued[j]] * job.pods)
            self.status[j] = "gone"
            self.emit("delete", job=job.name)
        elif self.status[j] == "running" and self.incarnation[j] == inc:
            self.release(j)
            self.status[j] = "done"
            self.emit("finish", job=job.name)

    def schedule(self) -> None:
        again = True
        while again:
            again = False
            order = sorted((-self.jobs[j].priority.value, self.queued[j], j) for j in range(len(self.jobs))
                           if self.status[j] == "pending")
            for _, _, j in order:
                if self.status[j] != "pending":
                    continue
                preempted, _ = self.place(j)
                again |= preempted
                if preempted:
                    break

    def allowed(self, node: RefNode, job: Job) -> bool:
        return matches(node.group.spec, job.selector)

    def place(self, j: int) -> tuple[bool, bool]:
        job = self.jobs[j]
        placed: list[tuple[int, list[int]]] = []
        preempted = False
        for _ in range(job.pods):
            ok = [i for i, n in enumerate(self.nodes) if self.allowed(n, job) and _fits(n, job)]
            if not ok and job.priority.preemption_policy != "Never" and self.preempt(job):
                preempted = True
                ok = [i for i, n in enumerate(self.nodes) if self.allowed(n, job) and _fits(n, job)]
            if not ok:
                break
            best = max(ok, key=lambda i: (_score(self.nodes[i], job, self.most), -i))
            devs = _devices(self.nodes[best], job)
            self.take(self.nodes[best], job, devs, -1)
            placed.append((best, devs))
        if len(placed) < job.pods:
            for i, devs in placed:
                self.take(self.nodes[i], job, devs, +1)
            return preempted, False
        self.start(j, placed)
        return preempted, True

    def take(self, node: RefNode, job: Job, devs: list[int], sign: int) -> None:
        node.cpu += sign * job.task.cpu_milli
        node.mem += sign * job.task.mem_bytes
        node.pods += sign
        for d in devs:
            node.dev[d] += sign * job.task.gpu_milli

    def running_on(self, i: int) -> list[tuple[int, int, list[int]]]:
        return [(j, m, devs) for j in range(len(self.jobs)) if self.status[j] == "running"
                for m, (n, devs) in enumerate(self.placement[j]) if n == i]

    def preempt(self, job: Job) -> bool:
        cands = []
        for i, node in enumerate(self.nodes):
            if not self.allowed(node, job):
                continue
            if job.task.num_gpu and job.task.models is not None and node.model not in job.task.models:
                continue
            lower = [p for p in self.running_on(i) if self.jobs[p[0]].priority.value < job.priority.value]
            if not lower:
                continue
            for j, _, devs in lower:
                self.take(node, self.jobs[j], devs, +1)
            if not _fits(node, job):
                for j, _, devs in lower:
                    self.take(node, self.jobs[j], devs, -1)
                continue
            victims = []
            for j, m, devs in sorted(lower, key=lambda p: (-self.jobs[p[0]].priority.value, self.started[p[0]], p[0], p[1])):
                self.take(node, self.jobs[j], devs, -1)
                if not _fits(node, job):
                    self.take(node, self.jobs[j], devs, +1)
                    victims.append((j, m))
            # restore the node: put every victim back (nothing is evicted yet)
            for j, m in victims:
                self.take(node, self.jobs[j], self.placement[j][m][1], -1)
            prios = [self.jobs[j].priority.value for j, _ in victims]
            top = max(prios)
            # the node whose highest-priority victims started latest (their earliest start is the latest)
            latest = min(self.started[j] for j, _ in victims if self.jobs[j].priority.value == top)
            cands.append(((0, top, sum(p + 2**31 for p in prios), len(victims), -latest, i), i, victims))
        if not cands:
            return False
        _, i, victims = min(cands)
        for j in sorted({j for j, _ in victims}):
            self.emit("preempt", job=self.jobs[j].name, by=job.name, node=self.nodes[i].name)
            self.evict(j)
        return True

    def start(self, j: int, placed) -> None:
        job = self.jobs[j]
        self.status[j] = "running"
        self.started[j] = self.now
        self.useful_from[j] = self.now + (job.restart_overhead if self.restarts[j] and job.kind == BATCH else 0.0)
        self.placement[j] = placed
        self.waits.extend([self.now - self.queued[j]] * job.pods)
        if job.kind == BATCH:
            self.push(self.useful_from[j] + job.work - self.progress[j], _END, j, self.incarnation[j])
        self.emit("start", job=job.name, nodes=[self.nodes[i].name for i, _ in placed])

    def release(self, j: int) -> None:
        for i, devs in self.placement[j]:
            self.take(self.nodes[i], self.jobs[j], devs, +1)
        self.placement[j] = []

    def evict(self, j: int) -> None:
        job = self.jobs[j]
        if job.kind == BATCH:
            ran = max(0.0, self.now - self.useful_from[j])
            tau = job.checkpoint_interval
            saved = min(math.floor(ran / tau) * tau if tau > 0 else 0.0, job.work - self.progress[j])
            last = self.useful_from[j] + saved if saved > 0 else self.started[j]
            self.lost_work_gpu_s += job.gpus * (self.now - last)
            self.progress[j] = self.progress[j] + saved if tau > 0 else 0.0
        self.restarts[j] += 1
        self.release(j)
        self.queue(j)
        self.emit("evict", job=job.name, reason="preemption")
