"""POST /prioritize: the placement policy's judgement as kube-scheduler's 0-10 extender scores.

kube-scheduler adds `Score x weight x 10` (MaxNodeScore 100 / MaxExtenderPriority 10) to its own
plugin total per node and binds to the highest total. To make that node the one the policy
would choose as often as possible, the mapping is rank-compressed, not proportional:

* 10: the policy's own choice (`policy.choose`, with its tie rules);
* 9: other nodes with at least the chosen node's policy score (equals, or better-scored nodes
  a policy's own tie rule passed over, as `kubegpu`'s near-tie rule does); kube-scheduler's
  plugins may pick among them;
* 0-8: every other candidate, min-max scaled by policy score (monotone: a better policy score
  never gets a lower extender score);
* 0: nodes /filter would reject (the core's verdict or a GPU rule) and unknown names.

The chosen node's lead is then at least `weight x 10` points over any tie and `2 x weight x 10`
over any worse node: with the chart's weight 10, 100 and 200 points, more than the default
plugins' typical spread (docs/extender.md measures the agreement).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import msgspec
import numpy as np

from kubegpu.extender.core import core_verdict
from kubegpu.extender.podfacts import PodFacts
from kubegpu.extender.state import ExtenderModel, ExtenderStore, node_index_array
from kubegpu.extender.wire import MAX_EXTENDER_PRIORITY, HostPriority, gather_host_priorities
from kubegpu.placement.measure import node_fragmentation
from kubegpu.placement.state import PlacementState, default_devices
from kubegpu.placement.task import Placement, Task

TIE_SCORE = MAX_EXTENDER_PRIORITY - 1
REST_MAX = MAX_EXTENDER_PRIORITY - 2
TOP_RECORDED = 5


def policy_scores(policy, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
    """The policy's own score of each candidate (higher is better), where it has one.

    FGD-family policies expose `scored`, the kube-style ones `node_scores`; a policy with
    neither (random) scores every node alike and only its choice stands out.
    """
    if hasattr(policy, "scored"):
        return np.asarray(policy.scored(state, task, nodes)[0], dtype=np.float64)
    if hasattr(policy, "node_scores"):
        return np.asarray(policy.node_scores(state, task, nodes), dtype=np.float64)
    return np.zeros(len(nodes), dtype=np.float64)


def extender_scores(policy_score: np.ndarray, chosen: int) -> np.ndarray:
    """0-10 scores for candidates with `policy_score`, the policy's choice at position `chosen`."""
    out = np.zeros(len(policy_score), dtype=np.int64)
    if not len(policy_score):
        return out
    top = policy_score[chosen]
    tie = policy_score >= top       # a policy with tie rules (kubegpu) may choose below the best score
    rest = ~tie
    if rest.any():
        lo, hi = policy_score[rest].min(), policy_score[rest].max()
        span = hi - lo
        scaled = np.full(int(rest.sum()), REST_MAX) if span <= 0 else np.floor(
            (policy_score[rest] - lo) / span * REST_MAX)
        out[rest] = scaled.astype(np.int64)
    out[tie] = TIE_SCORE
    out[chosen] = MAX_EXTENDER_PRIORITY
    return out


@dataclass
class PrioritizeAnswer:
    names: list[str]
    scores: np.ndarray            # 0-10 per requested name
    policy_score: np.ndarray      # per requested name (nan where not a candidate)
    chosen: int | None            # index into names
    placement: Placement | None
    task: Task | None
    top: list[tuple[int, float | None]]   # (name index, stranded GPUs after) for the best few
    score_ms: float


def decide_prioritize(store: ExtenderStore, model: ExtenderModel, facts: PodFacts, names: list[str],
                      *, assume: bool = True) -> PrioritizeAnswer:
    """Score the requested nodes with the store's policy; assume the pod onto the chosen node."""
    t0 = time.perf_counter()
    idx_all, known = node_index_array(model, names)
    scores = np.zeros(len(names), dtype=np.int64)
    pscore = np.full(len(names), np.nan)
    best: tuple[float, int, int, Placement, Task] | None = None
    core = core_verdict(model, facts)
    with store.lock:
        live, policy = store.live, store.policy
        # only nodes /filter would pass are candidates (kube-scheduler sends no others; a config
        # without the filter verb still never gets a node scored that the rules reject)
        ok = known.copy()
        ok[known] = core.fits[idx_all[known]] & (
            model.gpu_verdicts(facts, live, idx_all[known], assume_ttl=store.assume_ttl).code == 0)
        groups = model.gpu_group[np.maximum(idx_all, 0)]
        for g in np.unique(groups[ok]).tolist():
            sel = np.flatnonzero(ok & (groups == g))
            task = facts.task(model.gpu_kinds[g])
            fits = live.fit_mask(task)[idx_all[sel]]
            sel = sel[fits]
            if not len(sel):
                continue
            nodes = idx_all[sel]
            feasible = np.zeros(live.n_nodes, dtype=bool)
            feasible[nodes] = True
            choice = policy.choose(live, task, feasible)
            if choice is None:
                continue
            ps = policy_scores(policy, live, task, nodes)
            pscore[sel] = ps
            at = int(np.flatnonzero(nodes == choice.node)[0])
            key = (ps[at], -int(live.tie_rank[choice.node]))
            if best is None or key > (best[0], -int(live.tie_rank[best[3].node])):
                best = (ps[at], g, int(sel[at]), choice, task)
        chosen = placement = task = None
        if best is not None:
            _, _, chosen, placement, task = best
            cand = np.flatnonzero(~np.isnan(pscore))
            scores[cand] = extender_scores(pscore[cand], int(np.flatnonzero(cand == chosen)[0]))
        top = _top(model, live, facts, names, idx_all, scores, pscore, placement)
        if assume and placement is not None:
            store.assume(facts.pod.key, task, placement)
    return PrioritizeAnswer(names, scores, pscore, chosen, placement, task, top,
                            (time.perf_counter() - t0) * 1e3)


def _top(model, live, facts, names, idx_all, scores, pscore, placement) -> list[tuple[int, float | None]]:
    """The best few requested nodes, with the FGD measure F_n(M) (in GPUs) left after placing there."""
    cand = np.flatnonzero(~np.isnan(pscore))
    if not len(cand):
        return []
    order = cand[np.lexsort((-pscore[cand], -scores[cand]))][:TOP_RECORDED]
    stranded = stranded_after(model, live, facts, idx_all[order], placement)
    return [(int(j), v) for j, v in zip(order.tolist(), stranded)]


def stranded_after(model: ExtenderModel, live: PlacementState, facts: PodFacts, nodes: np.ndarray,
                   placement: Placement | None = None) -> list[float]:
    """Per node: the GPUs the cluster's workload mix could not use there after placing the pod (F_n(M)).

    The node of `placement` uses its devices (the policy's choice); the others the default choice
    (best-fit for a share, lowest free devices for whole GPUs); one vectorised measure for all.
    """
    dev = live.dev_free[nodes].copy()
    cpu = live.cpu_free[nodes].copy()
    for r, i in enumerate(nodes.tolist()):
        task = facts.task(model.gpu_kinds[int(model.gpu_group[i])])
        devices = placement.devices if placement is not None and placement.node == i else default_devices(dev[r], task)
        for d in devices:
            dev[r, d] -= task.gpu_milli
        cpu[r] -= task.cpu_milli
    access = model.mix.access(live.gpu_model[nodes], live.gpu_models)
    return [round(float(v) / 1000.0, 3) for v in node_fragmentation(cpu, dev, access, model.mix)]


def encode_priorities(model: ExtenderModel, answer: PrioritizeAnswer) -> bytes:
    """The HostPriorityList JSON array: pre-encoded per-node records gathered with numpy (the hot path)."""
    idx_all, known = node_index_array(model, answer.names)
    if not len(idx_all):
        return b"[]"
    if not known.all():   # a name the generation does not know: the plain way
        return msgspec.json.encode([HostPriority(Host=n, Score=int(s)) for n, s in zip(answer.names, answer.scores)])
    return gather_host_priorities(model.host_records, idx_all, answer.scores)
