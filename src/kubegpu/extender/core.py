"""The scheduling core's verdict for one pod on every node, in the form the extender indexes.

The one fit rule is `scheduling.cycle.run_filters`; this module only reshapes its FilterOutcome
into per-node arrays (code, message key) plus the message table, and remembers the result per
pod shape for the generation, so filter and prioritize of one cycle (and the replicas of one
template) run the core once. A node's message is upstream's Status.Message() of its first
failing filter: the reasons joined with ", ".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.extender.podfacts import PodFacts
from kubegpu.extender.state import ExtenderModel
from kubegpu.scheduling.cycle import OUTSIDE_PREFILTER, FilterOutcome, run_filters

_PLUGIN_STRIDE = 1 << 20


@dataclass
class CoreVerdict:
    """Per node of the generation: upstream code (0 = fits) and a key into `texts` / `reasons`.

    Only these arrays are kept (not the FilterOutcome's per-plugin arrays): 256 remembered shapes
    at 5,000 nodes stay a few MB."""

    code: np.ndarray
    key: np.ndarray
    texts: dict[int, str]
    reasons: dict[int, tuple[str, ...]]

    @property
    def fits(self) -> np.ndarray:
        return self.code == 0


def core_verdict(model: ExtenderModel, facts: PodFacts) -> CoreVerdict:
    """run_filters for the pod on every node of the generation (cached per pod shape)."""
    hit = model.shape_cache.get(facts.shape)
    if hit is not None:
        model.shape_cache.move_to_end(facts.shape)
        return hit
    snap = model.snapshot
    outcome = run_filters(snap, facts.pod, model.version, info=snap.pod_info(facts.pod))
    verdict = _reshape(outcome)
    model.remember_shape(facts.shape, verdict)
    return verdict


def _reshape(outcome: FilterOutcome) -> CoreVerdict:
    n = outcome.num_nodes
    code = outcome.codes().astype(np.int8)
    key = np.full(n, -1, dtype=np.int64)
    reasons: dict[int, tuple[str, ...]] = {}
    if outcome.prefilter is not None:
        key[:] = 0
        reasons[0] = outcome.prefilter.reasons
    else:
        first = outcome.first
        outside = first == OUTSIDE_PREFILTER
        if outside.any():
            key[outside] = 0
            reasons[0] = (outcome.outside_reason(),)
        for p, res in enumerate(outcome.results):
            sel = first == p
            if not sel.any():
                continue
            key[sel] = (p + 1) * _PLUGIN_STRIDE + res.rid[sel]
            for rid in np.unique(res.rid[sel]).tolist():
                reasons[(p + 1) * _PLUGIN_STRIDE + rid] = tuple(res.table[rid])
    texts = {k: ", ".join(r) for k, r in reasons.items()}
    return CoreVerdict(code, key, texts, reasons)
