"""`kubegpu shadow`: price every bind any scheduler makes against the policy's choice, write nothing.

Each new generation of the live cluster data is compared with the one before: a pod that was
pending (or absent) before and is bound now was bound by the cluster's scheduler. Before the
new generation goes live, each such bind is judged on the previous generation, the state the
scheduler saw: the node the policy would have chosen (the same `/filter` rules and
`/prioritize` choice the extender uses), and the GPUs the cluster's own workload mix could not
use on the scheduler's node and on the policy's node after the pod (the FGD measure F_n(M)).
One `mode: shadow` record per bind; running totals on /metrics. The binds of one batch are
judged in order, each placed on the working state before the next.
"""

from __future__ import annotations

import threading
import time

import msgspec
import numpy as np
from prometheus_client import Counter

from kubegpu.extender.ledger import Decision, Ledger, Score, Timings
from kubegpu.extender.prioritize import decide_prioritize, stranded_after
from kubegpu.extender.service import gpu_request, now_text, pod_ref
from kubegpu.extender.state import ExtenderModel, ExtenderStore
from kubegpu.model.cluster import ClusterState
from kubegpu.placement.state import default_devices
from kubegpu.placement.task import Placement


def new_binds(before: ClusterState, after: ClusterState) -> list:
    """Pods bound in `after` that were pending in `before` or not there at all, in bind order if known."""
    out = []
    for pod in after.pods:
        if not pod.spec.node_name or pod.is_terminal:
            continue
        old = before.pod(pod.namespace, pod.name)
        if old is None or (old.is_unscheduled and old.metadata.uid == pod.metadata.uid):
            out.append(pod)
    return out


class ShadowTotals:
    """Running totals for /metrics: binds, agreement, stranded GPUs after the scheduler's and the policy's node."""

    def __init__(self, registry) -> None:
        self.binds = Counter("kubegpu_shadow_binds", "Binds judged, by whether the policy would have chosen the same node.",
                             ["agreed"], registry=registry)
        self.stranded = Counter("kubegpu_shadow_stranded_gpus",
                                "GPUs the workload mix could not use on the bound node after each bind, summed: "
                                "by the cluster's scheduler, or by the policy's node for the same pods.",
                                ["by"], registry=registry)


class ShadowStore(ExtenderStore):
    """An ExtenderStore whose every new generation first judges the binds since the last one."""

    def __init__(self, *, ledger: Ledger, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ledger = ledger
        self.totals: ShadowTotals | None = None
        self.judged = 0
        self._build_lock = threading.Lock()

    def install(self, state: ClusterState) -> None:
        with self._build_lock:
            model = ExtenderModel.build(state, generation=self.generation + 1, k8s_version=self.k8s_version)
            if self.model is not None:
                for pod in new_binds(self.model.cluster, state):
                    self.judge(pod)
            self.swap(model)

    def judge(self, bound) -> Decision | None:
        """One shadow record for a bind, judged on the current (previous) generation."""
        t0 = time.perf_counter()
        model = self.model
        node = bound.spec.node_name
        i = model.index.get(node)
        if i is None:
            return None
        pending = msgspec.structs.replace(bound, spec=msgspec.structs.replace(bound.spec, node_name=None))
        facts = model.facts(pending)
        names = model.snapshot.names
        answer = decide_prioritize(self, model, facts, names, assume=False)
        with self.lock:
            actual = stranded_after(model, self.live, facts, np.asarray([i]))[0]
            scores = [Score(node=node, score=int(answer.scores[i]), policy_score=_num(answer.policy_score[i]),
                            stranded_gpus_after=actual)]
            choice = names[answer.chosen] if answer.chosen is not None else None
            if choice is not None and choice != node:
                theirs = stranded_after(model, self.live, facts, np.asarray([answer.chosen]), answer.placement)[0]
                scores.append(Score(node=choice, score=10, policy_score=_num(answer.policy_score[answer.chosen]),
                                    stranded_gpus_after=theirs))
            else:
                theirs = actual
            task = facts.task(model.gpu_kinds[int(model.gpu_group[i])])
            if self.live.fits_on(task, i):   # the next bind of the batch sees this one
                self.live.place(task, Placement(i, default_devices(self.live.dev_free[i], task)))
        agreed = choice == node
        d = Decision(id=self.ledger.next_id(), time=now_text(), mode="shadow", pod=pod_ref(facts, model),
                     request=gpu_request(facts), generation=model.generation,
                     snapshot_age_s=round(self.age() or 0.0, 3), policy=self.policy_name, scores=scores,
                     chosen=node, policy_choice=choice, outcome="agreed" if agreed else "differed",
                     timings=Timings(total_ms=round((time.perf_counter() - t0) * 1e3, 3)))
        self.ledger.record(d)
        self.judged += 1
        if self.totals is not None:
            self.totals.binds.labels(str(agreed).lower()).inc()
            self.totals.stranded.labels("scheduler").inc(actual)
            self.totals.stranded.labels("policy").inc(theirs)
        return d


def _num(value) -> float:
    return 0.0 if value != value else round(float(value), 4)   # nan: the node is no candidate for the policy
