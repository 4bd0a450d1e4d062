"""Label selector matching, as the API machinery defines it (metav1.LabelSelectorAsSelector)."""

from __future__ import annotations

from kubegpu.model.objects import LabelSelector


def selector_matches(selector: LabelSelector | None, labels: dict[str, str], *,
                     empty_matches_all: bool = True) -> bool:
    """True when `labels` satisfy the selector.

    upstream: an empty selector matches everything (PDB, NetworkPolicy podSelector), a nil
    selector matches nothing; callers pass None for nil.
    """
    if selector is None:
        return False
    if not selector.match_labels and not selector.match_expressions:
        return empty_matches_all
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        op = req.operator
        has = req.key in labels
        if op == "In" and not (has and labels[req.key] in req.values):
            return False
        if op == "NotIn" and has and labels[req.key] in req.values:
            return False
        if op == "Exists" and not has:
            return False
        if op == "DoesNotExist" and has:
            return False
    return True


def map_selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """A Service-style equality selector; an empty one selects nothing (as for Services)."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())
