"""The prices file: what matches a node, reserved capacity billed as simulate bills it, bad input."""

from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.money.prices import NodeFacts, PriceBook, blended_hourly, node_price, parse_prices
from kubegpu.simulate.billing import Billing
from kubegpu.simulate.nodes import NodeRecord

A100 = NodeFacts(name="n1", pool="train", instance_type="p4d.24xlarge", gpu_model="NVIDIA-A100-SXM4-40GB", gpus=8)


def book(text: str) -> PriceBook:
    return parse_prices(text, where="prices.yaml")


def test_pool_beats_instance_type_beats_gpu_model():
    b = book("""
currency: EUR
prices:
  - gpuModel: NVIDIA-A100-SXM4-40GB
    perGpuHour: 2
  - instanceType: p4d.24xlarge
    perHour: 20
  - pool: train
    perHour: 30
    currency: USD
    source: our bill
""")
    p = node_price(b, A100)
    assert (p.per_hour, p.currency, p.source) == (30, "USD", "our bill")
    p = node_price(b, NodeFacts("n2", "other", "p4d.24xlarge", "NVIDIA-A100-SXM4-40GB", 8))
    assert (p.per_hour, p.per_gpu_hour, p.currency, p.source) == (20, 2.5, "EUR", "prices file prices.yaml")
    p = node_price(b, NodeFacts("n3", "other", "custom", "NVIDIA-A100-SXM4-40GB", 4))
    assert (p.per_hour, p.per_gpu_hour) == (8, 2)
    assert node_price(b, NodeFacts("n4", "other", "custom", "NVIDIA-H100", 8)) is None


def test_a_gpu_hour_price_does_not_price_a_cpu_node():
    b = book("prices: [{pool: cpu, perGpuHour: 3}]")
    assert node_price(b, NodeFacts("c", "cpu", "m6i.4xlarge", "", 0)) is None


def test_reserved_share_is_billed_as_simulate_bills_reserved_nodes():
    b = book("prices: [{pool: train, perHour: 100, reserved: {share: 0.25, discount: 0.4}}]")
    hourly = node_price(b, A100).per_hour
    billing = Billing(currency="USD", granularity=1.0, minimum=0.0, tiers=(), reserved_discount=0.4)
    _, reserved_hour = billing.node_cost(NodeRecord("x", "g", 0.0, reserved=True), 100.0, 3600.0)
    assert reserved_hour == pytest.approx(60.0)
    assert hourly == pytest.approx(0.75 * 100 + 0.25 * reserved_hour) == pytest.approx(90.0)
    assert blended_hourly(100, reserved_share=0, reserved_discount=0.9, currency="USD") == pytest.approx(100)


def test_list_prices_only_for_known_instance_types_and_say_so():
    lst = PriceBook(origin="list", prices=())
    p = node_price(lst, A100)
    assert p.per_hour == 21.96 and p.currency == "USD"
    assert p.source.startswith("list price p4d.24xlarge") and "2026-11-09" in p.source
    assert node_price(lst, NodeFacts("n", "p", "my-own-box", "A100", 8)) is None


@pytest.mark.parametrize("text, field", [
    ("prices: [{pool: a, instanceType: b, perHour: 1}]", "prices[0]"),
    ("prices: [{pool: a}]", "prices[0]"),
    ("prices: [{pool: a, perHour: 1, perGpuHour: 1}]", "prices[0]"),
    ("prices: [{pool: a, perHour: -1}]", "prices[0].perHour"),
    ("prices: [{pool: a, perHour: .nan}]", "prices[0].perHour"),
    ("prices: [{pool: a, perHour: 1e12}]", "prices[0].perHour"),
    ("prices: [{pool: a, perHour: 1, currency: yuan}]", "prices[0].currency"),
    ("prices: [{pool: a, perHour: 1, reserved: {share: 1.5}}]", "prices[0].reserved.share"),
    ("prices: [{pool: a, perHour: 1, perday: 3}]", "prices[0]"),
    ("prices: [{pool: a, perHour: ten}]", "prices[0].perHour"),
    ("currency: dollars\nprices: []", "currency"),
])
def test_bad_prices_name_the_file_and_field(text, field):
    with pytest.raises(InputError) as err:
        book(text)
    assert err.value.where == "prices.yaml"
    assert err.value.field == field or (err.value.field or "").startswith(field)


def test_not_one_document():
    with pytest.raises(InputError, match="one YAML document"):
        book("prices: []\n---\nprices: []\n")


COST_FACTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "cost-facts.md"


@pytest.mark.skipif(not COST_FACTS.is_file(), reason="../shared/reference/cost-facts.md not present")
def test_every_list_price_is_in_the_cost_facts_with_its_source():
    from kubegpu.money.list_prices import LIST_PRICES

    text = COST_FACTS.read_text()
    for p in LIST_PRICES:
        row = next((line for line in text.splitlines() if p.instance_type in line and "|" in line), None)
        assert row is not None, p.instance_type
        per_gpu = p.per_hour / p.gpus
        figures = {f"{p.per_hour:g}", f"{p.per_hour:.2f}", f"{per_gpu:.4f}".rstrip("0"), f"{per_gpu:.3f}"}
        assert any(f in row for f in figures), (p.instance_type, row)
        assert p.currency == "USD" and "$" in row
