"""The prices file (`--prices FILE`) and what each node costs an hour.

A prices file is YAML:

    currency: USD                      # default for entries without their own
    prices:
      - pool: training                 # or instanceType: p4d.24xlarge, or gpuModel: NVIDIA-A100-SXM4-40GB
        perHour: 21.96                 # the node's hourly price (or perGpuHour: 2.745)
        source: "AWS bill, Nov 2026"   # optional; default: the file's name
        reserved: {share: 0.5, discount: 0.37}   # optional: half bought committed at 37 % off

A node takes the first entry that matches its pool, then its `node.kubernetes.io/instance-type`,
then its GPU model. Reserved capacity is billed as `simulate`'s billing model bills reserved
nodes (simulate.billing.Billing), so the hourly price is the blend of on-demand and reserved.
Without a prices file, built-in list prices (list_prices.py) price the instance types we know,
labelled as list prices; the demo cluster carries the article's figure instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import msgspec

from kubegpu.errors import InputError
from kubegpu.money.list_prices import list_price
from kubegpu.simulate.billing import Billing
from kubegpu.simulate.nodes import NodeRecord
from kubegpu.guards.bounded import read_bounded
from kubegpu.guards.safe_yaml import load_yaml_documents

MAX_PRICE = 1e7               # per hour; more is a typo (or a currency with no minor unit run wild)
MAX_PRICES_BYTES = 4 << 20
_CURRENCY = re.compile(r"^[A-Z]{3}$")   # ISO 4217 code
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


class Reserved(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    share: float = 0.0        # fraction of the nodes bought as reserved / committed capacity
    discount: float = 0.0     # reserved nodes cost (1 - discount) x the price


class PriceEntry(msgspec.Struct, forbid_unknown_fields=True, frozen=True, rename="camel"):
    pool: str | None = None
    instance_type: str | None = None
    gpu_model: str | None = None
    per_hour: float | None = None
    per_gpu_hour: float | None = None
    currency: str | None = None
    source: str | None = None
    reserved: Reserved | None = None


class PricesFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    currency: str = "USD"
    prices: list[PriceEntry] = []


@dataclass(frozen=True)
class Price:
    """One resolved price rule: what it matches, the node-hour or GPU-hour price, where it came from."""

    match: str                 # "pool", "instanceType" or "gpuModel"
    key: str
    per_hour: float | None
    per_gpu_hour: float | None
    currency: str
    source: str
    reserved_share: float = 0.0
    reserved_discount: float = 0.0


@dataclass(frozen=True)
class PriceBook:
    """The prices in force and where they came from: "file", "demo", "list" or "none"."""

    origin: str
    prices: tuple[Price, ...]

    @property
    def empty(self) -> bool:
        return self.origin == "none"


@dataclass(frozen=True)
class NodePrice:
    node: str
    pool: str
    per_hour: float            # the node's blended hourly price
    per_gpu_hour: float        # per physical GPU (0 for nodes without GPUs)
    currency: str
    source: str


NO_PRICES = PriceBook(origin="none", prices=())
LIST_PRICES_BOOK = PriceBook(origin="list", prices=())   # the built-in list prices (no --prices given)


def _check_amount(value: float, *, where: str, field: str) -> None:
    if not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
        raise InputError(f"{value!r} is not a price between 0 and {MAX_PRICE:g} per hour", where=where, field=field)


def _entry_price(e: PriceEntry, i: int, default_currency: str, default_source: str, where: str) -> Price:
    at = f"prices[{i}]"
    keys = [(name, v) for name, v in (("pool", e.pool), ("instanceType", e.instance_type), ("gpuModel", e.gpu_model))
            if v is not None]
    if len(keys) != 1 or not keys[0][1]:
        raise InputError("give exactly one of pool, instanceType or gpuModel", where=where, field=at)
    if (e.per_hour is None) == (e.per_gpu_hour is None):
        raise InputError("give exactly one of perHour (the node) or perGpuHour", where=where, field=at)
    for name, value in (("perHour", e.per_hour), ("perGpuHour", e.per_gpu_hour)):
        if value is not None:
            _check_amount(value, where=where, field=f"{at}.{name}")
    currency = e.currency or default_currency
    if not _CURRENCY.match(currency):
        raise InputError(f"{currency!r} is not an ISO 4217 currency code such as USD or CNY", where=where,
                         field=f"{at}.currency")
    share = discount = 0.0
    if e.reserved is not None:
        share, discount = e.reserved.share, e.reserved.discount
        for name, value in (("share", share), ("discount", discount)):
            if not (math.isfinite(value) and 0 <= value <= 1):
                raise InputError(f"{value!r} is not a fraction between 0 and 1", where=where,
                                 field=f"{at}.reserved.{name}")
    return Price(match=keys[0][0], key=keys[0][1], per_hour=e.per_hour, per_gpu_hour=e.per_gpu_hour,
                 currency=currency, source=e.source or default_source, reserved_share=share,
                 reserved_discount=discount)


def parse_prices(text: str | bytes, *, where: str, origin: str = "file", source: str | None = None) -> PriceBook:
    """A prices file's text as a PriceBook; InputError naming the file and field on any problem."""
    docs = [d for d in load_yaml_documents(text, where=where) if d is not None]
    if len(docs) != 1:
        raise InputError("expected one YAML document with `prices:`", where=where)
    try:
        spec = msgspec.convert(docs[0], PricesFile)
    except msgspec.ValidationError as err:
        msg, _, path = str(err).partition(" - at `")
        raise InputError(msg, where=where, field=path.rstrip("`").removeprefix("$.") or None) from None
    if not _CURRENCY.match(spec.currency):
        raise InputError(f"{spec.currency!r} is not an ISO 4217 currency code such as USD or CNY", where=where,
                         field="currency")
    default_source = source or f"prices file {where}"
    return PriceBook(origin=origin, prices=tuple(_entry_price(e, i, spec.currency, default_source, where)
                                                 for i, e in enumerate(spec.prices)))


def read_prices(path: str) -> PriceBook:
    """The prices file at `path` (bounded read: a FIFO or a huge file is an input error, not a hang)."""
    try:
        data = read_bounded(path, where=path, max_bytes=MAX_PRICES_BYTES)
    except OSError as err:
        raise InputError(f"cannot read prices: {err.strerror or err}", where=path) from None
    return parse_prices(data, where=path)


def blended_hourly(price: float, *, reserved_share: float, reserved_discount: float, currency: str) -> float:
    """One hour of a node at `price`, a share of them reserved: billed as simulate bills nodes."""
    billing = Billing(currency=currency, granularity=1.0, minimum=0.0, tiers=(), reserved_discount=reserved_discount)
    on_demand = billing.charge(billing.billed_seconds(3600.0), price)
    _, reserved = billing.node_cost(NodeRecord(name="", group="", created=0.0, reserved=True), price, 3600.0)
    return (1.0 - reserved_share) * on_demand + reserved_share * reserved


@dataclass(frozen=True)
class NodeFacts:
    """What a price can match on."""

    name: str
    pool: str
    instance_type: str
    gpu_model: str
    gpus: int


def _matches(p: Price, n: NodeFacts) -> bool:
    value = {"pool": n.pool, "instanceType": n.instance_type, "gpuModel": n.gpu_model}[p.match]
    return bool(value) and value == p.key


def node_price(book: PriceBook, n: NodeFacts) -> NodePrice | None:
    """The node's hourly price under `book`, or None when nothing prices it."""
    if book.origin == "list":
        lp = list_price(n.instance_type)
        if lp is None:
            return None
        return NodePrice(node=n.name, pool=n.pool, per_hour=lp.per_hour,
                         per_gpu_hour=lp.per_hour / n.gpus if n.gpus else 0.0, currency=lp.currency,
                         source=f"list price {lp.instance_type} ({lp.source})")
    for match in ("pool", "instanceType", "gpuModel"):
        for p in book.prices:
            if p.match != match or not _matches(p, n):
                continue
            if p.per_hour is None and not n.gpus:
                continue                      # a GPU-hour price says nothing about a node without GPUs
            base = p.per_hour if p.per_hour is not None else p.per_gpu_hour * n.gpus
            hourly = blended_hourly(base, reserved_share=p.reserved_share, reserved_discount=p.reserved_discount,
                                    currency=p.currency)
            return NodePrice(node=n.name, pool=n.pool, per_hour=hourly,
                             per_gpu_hour=hourly / n.gpus if n.gpus else 0.0, currency=p.currency, source=p.source)
    return None
