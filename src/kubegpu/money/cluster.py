"""Every node of a cluster priced under one PriceBook, and the GPU-hour rate of a set of nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.pools import node_pool
from kubegpu.money.amount import Money, money
from kubegpu.money.prices import INSTANCE_TYPE_LABELS, NO_PRICES, NodeFacts, NodePrice, PriceBook, node_price


class PricesUsed(msgspec.Struct, frozen=True):
    """Where this answer's prices came from, and how many GPU nodes they cover."""

    origin: str                # "file", "demo", "list" (built-in list prices) or "none"
    gpu_nodes: int
    priced_gpu_nodes: int
    sources: list[str]
    note: str


@dataclass(frozen=True)
class Rate:
    """A GPU-hour price over some nodes (GPU-weighted), with its currency and source."""

    per_gpu_hour: float
    currency: str
    source: str

    def of(self, gpu_hours: float, per: str) -> Money:
        return money(gpu_hours * self.per_gpu_hour, self.currency, per, self.source)


@dataclass(frozen=True)
class ClusterPrices:
    book: PriceBook
    by_node: dict[str, NodePrice] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)          # physical GPUs per node
    pools: dict[str, str] = field(default_factory=dict)         # node -> pool

    def rate(self, nodes: list[str] | None = None) -> Rate | None:
        """The GPU-hour rate of `nodes` (default every GPU node); None when a GPU node among them
        has no price or their currencies differ: a partial or mixed figure would mislead."""
        names = [n for n in (self.gpus if nodes is None else nodes) if self.gpus.get(n)]
        if not names or any(n not in self.by_node for n in names):
            return None
        prices = [self.by_node[n] for n in names]
        if len({p.currency for p in prices}) != 1:
            return None
        gpus = sum(self.gpus[n] for n in names)
        total = sum(p.per_gpu_hour * self.gpus[p.node] for p in prices)
        sources = "; ".join(dict.fromkeys(p.source for p in prices))
        return Rate(per_gpu_hour=total / gpus, currency=prices[0].currency, source=sources)

    @cached_property
    def _by_pool(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for node, pool in self.pools.items():
            out.setdefault(pool, []).append(node)
        return out

    def pool_nodes(self, pool: str) -> list[str]:
        """The nodes of `pool` (an index built once: `why --all` asks per remedy)."""
        return self._by_pool.get(pool, [])

    def pool_node_hour(self, pool: str) -> tuple[int, NodePrice | None] | None:
        """The largest GPU count of `pool`'s GPU nodes and its dearest node price (None when a price is
        missing or currencies differ); None without GPU nodes. Worked out once per pool: `why --all`
        asks per remedy, and a pool can hold thousands of nodes."""
        memo = self._pool_node_hour
        if pool not in memo:
            nodes = [n for n in self.pool_nodes(pool) if self.gpus.get(n)]
            priced = [self.by_node[n] for n in nodes if n in self.by_node]
            dearest = (max(priced, key=lambda p: p.per_hour)
                       if priced and len({p.currency for p in priced}) == 1 else None)
            memo[pool] = (max(self.gpus[n] for n in nodes), dearest) if nodes else None
        return memo[pool]

    @cached_property
    def _pool_node_hour(self) -> dict[str, tuple[int, NodePrice | None] | None]:
        return {}

    def used(self) -> PricesUsed:
        gpu_nodes = [n for n, g in self.gpus.items() if g]
        priced = [n for n in gpu_nodes if n in self.by_node]
        sources = sorted({self.by_node[n].source for n in priced})
        if self.book.empty:
            note = "no prices: figures are GPU-hours only (give --prices FILE)"
        elif not priced:
            note = f"{self.book.origin} prices match none of the GPU nodes: figures are GPU-hours only"
        elif self.book.origin == "list":
            note = "built-in on-demand list prices (no --prices given); your bill may differ"
        elif self.book.origin == "demo":
            note = "the demo cluster's price"
        else:
            note = "prices from --prices"
        if priced and len(priced) < len(gpu_nodes):
            note += f"; {len(gpu_nodes) - len(priced)} of {len(gpu_nodes)} GPU nodes have no price"
        return PricesUsed(origin=self.book.origin, gpu_nodes=len(gpu_nodes), priced_gpu_nodes=len(priced),
                          sources=sources, note=note)


def node_facts(state: ClusterState) -> list[NodeFacts]:
    out = []
    for node in state.nodes:
        labels = node.metadata.labels
        info = state.node_gpus[node.name]
        itype = next((labels[k] for k in INSTANCE_TYPE_LABELS if labels.get(k)), "")
        out.append(NodeFacts(name=node.name, pool=node_pool(node), instance_type=itype,
                             gpu_model=info.model or "", gpus=info.physical))
    return out


def cluster_prices(state: ClusterState, book: PriceBook = NO_PRICES) -> ClusterPrices:
    """Price every node of `state` under `book`."""
    facts = node_facts(state)
    by_node = {}
    for f in facts:
        p = node_price(book, f)
        if p is not None:
            by_node[f.name] = p
    return ClusterPrices(book=book, by_node=by_node, gpus={f.name: f.gpus for f in facts},
                         pools={f.name: f.pool for f in facts})
