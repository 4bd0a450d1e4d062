"""Node sets in `why --all`: each set of nodes is written out once, then referred to by its id.

Every pending pod's report groups the nodes by outcome (`node_groups`). On a big cluster the
same large sets come back in report after report ("these 12,000 nodes: Insufficient
nvidia.com/gpu"), and writing their names each time made the output grow as pending pods x
nodes (2.1 GB at 20,000 nodes and 4,000 pending pods). So, within one output:

- every group carries `node_set`, an id of its exact set of member nodes;
- the first group with a set lists its names in `nodes` (node order), later ones write `null`;
- a new set close to the last set written in full for the same verdict (fits, plugin, reasons)
  is written as that set (`node_set_base`) plus `nodes_added` minus `nodes_removed`, when that
  is shorter: pods whose anti-affinity rules out a few nodes each still cost a few names.

So the output grows with pending pods plus nodes (plus the nodes where one pod's verdict
differs from an earlier pod's). `resolve_node_sets` turns such a list back into full names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import msgspec
import numpy as np


class NodeSetRef(msgspec.Struct, frozen=True, gc=False):
    """How one group's members are written: in full, by id only, or as a change of a set written before."""

    node_set: int
    nodes: list[str] | None
    base: int | None = None
    added: list[str] | None = None
    removed: list[str] | None = None


class NodeSets:
    """The node sets one `why --all` output has written so far, in writing order.

    One object per output: ids are numbered in the order sets are first written, so a reader
    resolves them front to back (`resolve_node_sets`)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = np.asarray(list(names), dtype=object)
        self._ids: dict[bytes, int] = {}
        self._bases: dict[tuple, tuple[int, np.ndarray]] = {}  # verdict -> (id, member mask) written in full

    def __len__(self) -> int:
        return len(self._ids)

    def encode(self, members: np.ndarray, verdict: tuple) -> NodeSetRef:
        """The reference for a group with these member indices (ascending) and this verdict."""
        digest = hashlib.blake2b(np.ascontiguousarray(members, dtype=np.int64).tobytes(), digest_size=16).digest()
        known = self._ids.get(digest)
        if known is not None:
            return NodeSetRef(known, None)
        set_id = self._ids[digest] = len(self._ids)
        mask = np.zeros(len(self._names), dtype=bool)
        mask[members] = True
        base = self._bases.get(verdict)
        if base is not None:
            base_id, base_mask = base
            added, removed = np.flatnonzero(mask & ~base_mask), np.flatnonzero(base_mask & ~mask)
            if len(added) + len(removed) < len(members):
                return NodeSetRef(set_id, None, base_id, self._names[added].tolist(), self._names[removed].tolist())
        self._bases[verdict] = (set_id, mask)
        return NodeSetRef(set_id, self._names[members].tolist())


def resolve_node_sets(reports: Iterable[dict]) -> Iterable[dict]:
    """`why --all -o json` reports (plain dicts, in output order) with every group's `nodes` filled in.

    The inverse of NodeSets: what a consumer of the JSON does to get every name back (documented in
    docs/why-node-sets.md; the tests check that it gives back exactly the names grouped before)."""
    sets: dict[int, list[str]] = {}
    for report in reports:
        for group in report.get("node_groups") or []:
            set_id = group.get("node_set")
            if set_id is None:
                continue
            if group.get("nodes") is not None:
                sets[set_id] = group["nodes"]
            elif group.get("node_set_base") is not None:
                removed = set(group["nodes_removed"])
                sets[set_id] = [n for n in sets[group["node_set_base"]] if n not in removed] + group["nodes_added"]
            group["nodes"] = sets[set_id]
        yield report
