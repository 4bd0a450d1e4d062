"""Pod labels and namespaces as columns over the snapshot's pod slots.

InterPodAffinity and PodTopologySpread ask "which pods match this label selector in these
namespaces" for every pod they schedule. Upstream answers it once per cycle in PreFilter by
walking every NodeInfo; here one label key is an int32 column of value codes over pod slots
(-1 = the pod lacks the label), so a selector over 50,000 pods is a few numpy comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.model.objects import LabelSelector


class PodColumns:
    """Label value codes, namespace codes and terminating flags per pod slot."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.cols: dict[str, np.ndarray] = {}
        self.vocab: dict[str, dict[str, int]] = {}
        self.ns = np.full(cap, -1, dtype=np.int32)
        self.ns_vocab: dict[str, int] = {}
        self.terminating = np.zeros(cap, dtype=bool)

    @classmethod
    def build(cls, pods: Sequence[Pod | None], cap: int) -> "PodColumns":
        out = cls(cap)
        keys: dict[str, tuple[list[int], list[int]]] = {}
        ns_codes = np.full(cap, -1, dtype=np.int32)
        for s, pod in enumerate(pods):
            if pod is None:
                continue
            ns_codes[s] = out.ns_vocab.setdefault(pod.namespace, len(out.ns_vocab))
            if pod.metadata.deletion_timestamp:
                out.terminating[s] = True
            for k, v in pod.labels.items():
                slots, codes = keys.setdefault(k, ([], []))
                vocab = out.vocab.setdefault(k, {})
                slots.append(s)
                codes.append(vocab.setdefault(v, len(vocab)))
        out.ns = ns_codes
        for k, (slots, codes) in keys.items():
            col = np.full(cap, -1, dtype=np.int32)
            col[np.asarray(slots, dtype=np.int64)] = codes
            out.cols[k] = col
        return out

    def copy(self) -> "PodColumns":
        new = PodColumns.__new__(PodColumns)
        new.cap = self.cap
        new.cols = {k: v.copy() for k, v in self.cols.items()}
        new.vocab = {k: dict(v) for k, v in self.vocab.items()}
        new.ns = self.ns.copy()
        new.ns_vocab = dict(self.ns_vocab)
        new.terminating = self.terminating.copy()
        return new

    def grow(self, cap: int) -> None:
        def widen(a: np.ndarray, fill) -> np.ndarray:
            b = np.full(cap, fill, dtype=a.dtype)
            b[: len(a)] = a
            return b

        self.cols = {k: widen(v, -1) for k, v in self.cols.items()}
        self.ns = widen(self.ns, -1)
        self.terminating = widen(self.terminating, False)
        self.cap = cap

    def set(self, s: int, pod: Pod) -> None:
        """Record the pod now in slot s (slots are appended, never reused)."""
        self.ns[s] = self.ns_vocab.setdefault(pod.namespace, len(self.ns_vocab))
        self.terminating[s] = bool(pod.metadata.deletion_timestamp)
        for k, v in pod.labels.items():
            col = self.cols.get(k)
            if col is None:
                col = self.cols[k] = np.full(self.cap, -1, dtype=np.int32)
            vocab = self.vocab.setdefault(k, {})
            col[s] = vocab.setdefault(v, len(vocab))

    # ------------------------------------------------------------ matching
    def _column(self, key: str, m: int) -> np.ndarray:
        col = self.cols.get(key)
        return col[:m] if col is not None else np.full(m, -1, dtype=np.int32)

    def _codes(self, key: str, values: Iterable[str]) -> list[int]:
        vocab = self.vocab.get(key, {})
        return [vocab[v] for v in values if v in vocab]

    def selector(self, selector: LabelSelector | None, m: int, *, empty_matches_all: bool = True) -> np.ndarray:
        """bool[m]: slots whose labels satisfy the selector (as `model.selectors.selector_matches`)."""
        if selector is None:
            return np.zeros(m, dtype=bool)
        if not selector.match_labels and not selector.match_expressions:
            return np.full(m, empty_matches_all, dtype=bool)
        out = np.ones(m, dtype=bool)
        for key, value in selector.match_labels.items():
            codes = self._codes(key, (value,))
            out &= (self._column(key, m) == codes[0]) if codes else False
        for req in selector.match_expressions:
            col = self._column(req.key, m)
            op = req.operator
            if op in ("In", "NotIn"):
                codes = self._codes(req.key, req.values)
                hit = np.isin(col, codes) if codes else np.zeros(m, dtype=bool)
                out &= hit if op == "In" else ~hit
            elif op == "Exists":
                out &= col >= 0
            elif op == "DoesNotExist":
                out &= col < 0
            else:  # an operator LabelSelectorAsSelector rejects: the selector matches nothing
                out &= False
        return out

    def namespaces(self, names: Iterable[str], m: int) -> np.ndarray:
        codes = [self.ns_vocab[n] for n in names if n in self.ns_vocab]
        if len(codes) == 1:
            return self.ns[:m] == codes[0]
        return np.isin(self.ns[:m], codes) if codes else np.zeros(m, dtype=bool)

    def namespace_codes(self) -> dict[str, int]:
        return self.ns_vocab
