"""`kubegpu serve --rebalance-journal DIR` counts what the rebalancer's own /metrics counts: a real
round against the suite's API server, then both expositions compared family by family."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kubegpu.rebalance.budget import Budget
from kubegpu.web.metrics import rebalance_families
from kubegpu.web.rebalance import RebalanceJournal

SHARED = ("kubegpu_rebalance_moves_total", "kubegpu_rebalance_gpu_seconds_lost_total",
          "kubegpu_rebalance_stranded_gpus", "kubegpu_rebalance_reservations_held",
          "kubegpu_rebalance_rounds_total", "kubegpu_rebalance_skipped_by_budget_total")


def shared_samples(text: str) -> dict[tuple, float]:
    return {(s.name, *sorted(s.labels.items())): s.value for fam in text_string_to_metric_families(text)
            for s in fam.samples if s.name in SHARED}


def served(directory) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    from kubegpu.web.metrics import RebalanceCollector

    registry = CollectorRegistry(auto_describe=False)
    journal = RebalanceJournal(directory)
    journal.refresh()
    registry.register(RebalanceCollector(journal))
    assert journal.summary.errors == []
    return generate_latest(registry).decode()


def test_serve_reads_the_same_numbers_the_rebalancer_exports(live):
    reb = live.rebalancer()
    report = reb.round()
    assert report.status == "moved", report.message
    own, theirs = shared_samples(reb.metrics.exposition()), shared_samples(served(live.journal_dir))
    assert own[("kubegpu_rebalance_moves_total", ("outcome", "moved"))] == 3
    assert own == theirs


def test_a_round_held_back_by_quiet_hours_is_counted_by_both(live):
    from kubegpu.rebalance.budget import parse_quiet_hours

    reb = live.rebalancer(budget=Budget(quiet_hours=tuple(parse_quiet_hours("11:00-13:00"))))  # START is 12:00
    report = reb.round()
    assert report.status == "blocked", report.message
    own, theirs = shared_samples(reb.metrics.exposition()), shared_samples(served(live.journal_dir))
    assert own[("kubegpu_rebalance_skipped_by_budget_total", ("reason", "quiet-hours"))] == 1
    assert own == theirs
