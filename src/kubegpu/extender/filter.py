"""POST /filter: the scheduling core's verdict, then the GPU rules kube-scheduler cannot see.

A node passes only if the core (`run_filters`, the one fit rule) passes it on the extender's
snapshot AND every GPU rule passes it on the placement state with the assumed bindings AND, for
a gang member, the whole gang can be placed. Only names from the request are ever answered.
Rejections go to FailedAndUnresolvableNodes when preemption cannot help (upstream
UnschedulableAndUnresolvable: a wrong GPU model, too few devices) and to FailedNodes otherwise;
messages are the core's reasons as kube-scheduler words them, or kubegpu's own ("kubegpu: ...").
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from kubegpu.extender.core import core_verdict
from kubegpu.extender.gpu_rules import PREFIX, Verdicts, gpu_verdicts
from kubegpu.extender.podfacts import PodFacts
from kubegpu.extender.state import ExtenderModel, ExtenderStore, node_index_array
from kubegpu.scheduling.framework import Code
from kubegpu.placement.state import default_devices
from kubegpu.placement.task import Placement
from kubegpu.scheduling.message import fit_error_message

UNKNOWN_NODE = PREFIX + "node not in the extender's cache yet (it may have just joined)"


@dataclass
class FilterAnswer:
    """Per requested name: passed or not, and for the rejected ones a message; plus the ledger summary.

    Rejections are kept as positions into `names` with an index into `texts` (`soft` go to
    FailedNodes, `hard` to FailedAndUnresolvableNodes), so the reply can be gathered without a
    Python loop over nodes; `failed` / `unresolvable` give them as dicts.
    """

    names: list[str]
    passed: np.ndarray            # positions in `names`
    soft: np.ndarray
    soft_text: np.ndarray
    hard: np.ndarray
    hard_text: np.ndarray
    texts: list[str]
    reasons: Counter
    unknown: int
    gang: tuple | None            # (gang, placement) when the pod is a gang member
    core_ms: float
    gpu_ms: float

    @property
    def failed(self) -> dict[str, str]:
        return {self.names[j]: self.texts[t] for j, t in zip(self.soft.tolist(), self.soft_text.tolist())}

    @property
    def unresolvable(self) -> dict[str, str]:
        return {self.names[j]: self.texts[t] for j, t in zip(self.hard.tolist(), self.hard_text.tolist())}


def gang_verdict(model: ExtenderModel, facts: PodFacts) -> tuple | None:
    """(gang, its placement) for a gang member, else None.

    Members are placed one by one on a copy of the generation's placement state: among the
    nodes the core passes, those the GPU rules pass too, fullest GPU node first (a gang
    scheduler's binpack), each member's devices taken before the next is placed.
    """
    gang = model.gang_of(facts.pod)
    if gang is None:
        return None
    work = model.base.copy()

    def choose(pod, feasible: np.ndarray):
        member = PodFacts.of(pod)
        ok = feasible[gpu_verdicts(member, work, work, model.gpu_group, model.gpu_kinds, feasible,
                                   assume_ttl=0).code == 0]
        if not ok.size:
            return None
        i = int(ok[np.argmin(work.gpu_free[ok])])
        task = member.task(model.gpu_kinds[int(model.gpu_group[i])])
        work.place(task, Placement(i, default_devices(work.dev_free[i], task)))
        return i

    return gang, model.gang_placement(gang, choose)


def gang_message(gang, placement) -> str:
    return (f"{PREFIX}gang {gang.key}: {placement.bound + len(placement.placed)} of the {placement.min_member} "
            f"members it needs can be placed now")


def decide_filter(store: ExtenderStore, model: ExtenderModel, facts: PodFacts, names: list[str]) -> FilterAnswer:
    """The filter verdict for the requested `names` (unknown names fail, never pass)."""
    idx_all, known = node_index_array(model, names)
    k = len(names)
    t0 = time.perf_counter()
    core = core_verdict(model, facts)
    t1 = time.perf_counter()
    idx = idx_all[known]
    code = np.full(k, int(Code.UNSCHEDULABLE), dtype=np.int8)
    text_key = np.full(k, -1, dtype=np.int64)          # >= 0: core key; -2 - j: gpu message j; -1: unknown
    code_core = core.code[idx]
    code[known] = code_core
    text_key[known] = np.where(code_core != 0, core.key[idx], -1)
    with store.lock:
        gpu = model.gpu_verdicts(facts, store.live, idx, assume_ttl=store.assume_ttl)
    open_ = np.flatnonzero(known)[(code_core == 0) & (gpu.code != 0)]
    code[open_] = gpu.code[(code_core == 0) & (gpu.code != 0)]
    text_key[open_] = -2 - gpu.rid[(code_core == 0) & (gpu.code != 0)].astype(np.int64)
    gang = gang_verdict(model, facts)
    gang_text = None
    if gang is not None and not gang[1].schedulable:
        gang_text = gang_message(*gang)
        rest = known & (code == 0)
        code[rest] = int(Code.UNSCHEDULABLE)
        text_key[rest] = -2 - len(gpu.messages)
    t2 = time.perf_counter()
    return _answer(names, code, text_key, core, gpu, gang_text, gang, k - int(known.sum()), t1 - t0, t2 - t1)


def _answer(names, code, text_key, core, gpu: Verdicts, gang_text, gang, unknown, core_s, gpu_s) -> FilterAnswer:
    texts = {**core.texts, -1: UNKNOWN_NODE}
    texts.update({-2 - j: m for j, m in enumerate(gpu.messages)})
    if gang_text is not None:
        texts[-2 - len(gpu.messages)] = gang_text
    failing = np.flatnonzero(code != 0)
    reasons: Counter = Counter()
    keys, inverse, counts = np.unique(text_key[failing], return_inverse=True, return_counts=True)
    for key, c in zip(keys.tolist(), counts.tolist()):
        for reason in core.reasons.get(key, (texts[key],)) if key >= 0 else (texts[key],):
            reasons[reason] += c
    hard = code[failing] == int(Code.UNRESOLVABLE)
    inverse = np.asarray(inverse).reshape(-1)
    return FilterAnswer(
        names=names, passed=np.flatnonzero(code == 0), soft=failing[~hard], soft_text=inverse[~hard],
        hard=failing[hard], hard_text=inverse[hard], texts=[texts[k] for k in keys.tolist()],
        reasons=reasons, unknown=unknown, gang=gang, core_ms=core_s * 1e3, gpu_ms=gpu_s * 1e3)


def histogram_message(answer: FilterAnswer, model: ExtenderModel) -> str:
    """The rejected nodes as kube-scheduler's FailedScheduling text would count them."""
    return fit_error_message(len(answer.names), reason_counts=answer.reasons, version=model.version)
