"""Node labels as columns: a node-selector requirement becomes one numpy comparison over all nodes.

Every label key gets an int32 column of value codes (-1 = the node lacks the label), so In,
NotIn, Exists, DoesNotExist, Gt and Lt over 5,000 nodes cost a few microseconds. Results are
cached per requirement set, because pods of one workload repeat the same selectors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from kubegpu.model.integers import int_or_none  # upstream strconv.ParseInt(text, 10, 64)
from kubegpu.model.names import is_dns1123_subdomain
from kubegpu.model.objects import NodeSelectorRequirement, NodeSelectorTerm

OBJECT_NAME_FIELD = "metadata.name"


_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def valid_label_key(key: str) -> bool:
    """upstream IsQualifiedName: [DNS-subdomain prefix '/'] name of at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.match(name))


def valid_label_value(value: str) -> bool:
    """upstream IsValidLabelValue: empty, or at most 63 alphanumerics with '-', '_', '.' inside."""
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def valid_requirement(req: NodeSelectorRequirement, *, field: bool = False) -> bool:
    """upstream nodeSelectorRequirementsAsSelector / AsFieldSelector: what parses.

    Labels (labels.NewRequirement): the key must be a qualified name and every value a valid
    label value; In/NotIn need values, Exists/DoesNotExist none, Gt/Lt exactly one integer.
    Fields: In/NotIn with exactly one value, any key. Anything else is an error, and the term
    that holds it matches no node (the pod then fails with the plain node affinity reason).
    """
    op, values = req.operator, req.values
    if field:
        return op in ("In", "NotIn") and len(values) == 1
    if not valid_label_key(req.key) or not all(valid_label_value(v) for v in values):
        return False
    if op in ("In", "NotIn"):
        return len(values) > 0
    if op in ("Exists", "DoesNotExist"):
        return not values
    if op in ("Gt", "Lt"):
        return len(values) == 1 and int_or_none(values[0]) is not None
    return False


class LabelIndex:
    """Columnar node labels with vectorised requirement matching."""

    def __init__(self, names: Sequence[str], labels: Sequence[dict[str, str]]) -> None:
        self.n = len(names)
        self.names = np.asarray(list(names), dtype=object)
        self._labels = labels
        self._columns: dict[str, tuple[np.ndarray, dict[str, int], list[str]]] = {}
        keys: dict[str, dict[str, int]] = {}
        for lab in labels:
            for k in lab:
                keys.setdefault(k, {})
        for key in keys:
            vocab: dict[str, int] = {}
            col = np.full(self.n, -1, dtype=np.int32)
            for i, lab in enumerate(labels):
                v = lab.get(key)
                if v is not None:
                    col[i] = vocab.setdefault(v, len(vocab))
            self._columns[key] = (col, vocab, list(vocab))
        self._name_codes = {name: i for i, name in enumerate(names)}
        self._cache: dict[object, np.ndarray] = {}
        self.derived: dict[str, Any] = {}  # per-label-index facts other modules compute once (PV usability)

    def labels(self, i: int) -> dict[str, str]:
        return self._labels[i]

    def column(self, key: str) -> np.ndarray:
        """Value codes of one label key per node (-1 = absent)."""
        entry = self._columns.get(key)
        return entry[0] if entry else np.full(self.n, -1, dtype=np.int32)

    def code_of(self, key: str, value: str) -> int:
        entry = self._columns.get(key)
        return entry[1].get(value, -2) if entry else -2

    # ------------------------------------------------------------ matching
    def requirement(self, req: NodeSelectorRequirement, *, field: bool = False) -> np.ndarray:
        """Nodes satisfying one requirement (upstream nodeaffinity / labels.Selector semantics)."""
        op = req.operator
        if not valid_requirement(req, field=field):
            return np.zeros(self.n, dtype=bool)  # upstream: a term that does not parse matches no node
        if field:
            # upstream matches against fields.Set{metadata.name: node name}: any other key reads
            # as "", so In on it matches only "" and NotIn everything but ""
            if req.key == OBJECT_NAME_FIELD:
                hit = np.isin(self.names, list(req.values))
            else:
                hit = np.full(self.n, req.values[0] == "", dtype=bool)
            return hit if op == "In" else ~hit
        col = self.column(req.key)
        if op == "Exists":
            return col >= 0
        if op == "DoesNotExist":
            return col < 0
        if op in ("In", "NotIn"):
            codes = [self.code_of(req.key, v) for v in req.values]
            hit = np.isin(col, codes) if codes else np.zeros(self.n, dtype=bool)
            return hit if op == "In" else ~hit
        if op in ("Gt", "Lt"):
            bound = int_or_none(req.values[0]) if len(req.values) == 1 else None
            if bound is None:
                return np.zeros(self.n, dtype=bool)
            entry = self._columns.get(req.key)
            if entry is None:
                return np.zeros(self.n, dtype=bool)
            ints = np.asarray([int_or_none(v) for v in entry[2]], dtype=object)
            valid = np.asarray([x is not None for x in ints], dtype=bool)
            vals = np.asarray([x if x is not None else 0 for x in ints], dtype=np.int64)
            ok = valid & (vals > bound if op == "Gt" else vals < bound)
            return np.where(col >= 0, ok[np.maximum(col, 0)] if len(ok) else False, False)
        return np.zeros(self.n, dtype=bool)

    def term(self, term: NodeSelectorTerm) -> np.ndarray:
        """A NodeSelectorTerm: requirements ANDed; an empty term matches nothing (upstream)."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(self.n, dtype=bool)
        out = np.ones(self.n, dtype=bool)
        for req in term.match_expressions:
            out &= self.requirement(req)
        for req in term.match_fields:
            out &= self.requirement(req, field=True)
        return out

    def terms(self, terms: Sequence[NodeSelectorTerm]) -> np.ndarray:
        """NodeSelectorTerms ORed (a NodeSelector); cached by content."""
        key = ("terms", repr(terms))
        hit = self._cache.get(key)
        if hit is None:
            hit = np.zeros(self.n, dtype=bool)
            for t in terms:
                hit |= self.term(t)
            self._cache[key] = hit
        return hit

    def selector_map(self, selector: dict[str, str]) -> np.ndarray:
        """A pod's nodeSelector: every key must equal its value."""
        key = ("map", tuple(sorted(selector.items())))
        hit = self._cache.get(key)
        if hit is None:
            hit = np.ones(self.n, dtype=bool)
            for k, v in selector.items():
                hit &= self.column(k) == self.code_of(k, v)
            self._cache[key] = hit
        return hit
