"""`kubegpu serve --rebalance-journal DIR` counts what the rebalancer's own /metrics counts: a real
round against the suite's API server, then both expositions compared family by family."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kubegpu.rebalance.budget import Budget
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


def test_a_round_the_api_server_cuts_short_still_spends_its_moves_in_the_ledger(live):
    from apiserver.wire import status_reply

    from kubegpu.rebalance.ledger import Ledger

    evicted = []

    def fail_reads_after_the_evictions(request):
        if request.path.endswith("/eviction"):
            evicted.append(request.path)
        if len(evicted) >= 3 and request.method == "GET" and request.path == "/api/v1/pods" \
                and "watch" not in request.query:
            return status_reply(503, "ServiceUnavailable", "etcd is down")
        return None

    reb = live.rebalancer()
    live.server.faults.append(fail_reads_after_the_evictions)
    report = reb.round()
    live.server.faults.clear()
    assert report.status == "failed" and len(evicted) == 3, report.message
    (rec,) = Ledger(live.journal_dir).records()
    assert rec["status"] == "failed" and rec["moves"] == 3 and rec["outcomes"] == {"moved": 3}
    assert rec["gpu_hours"] == round(sum(m.gpu_hours for p in report.plans for m in p.moves), 4) > 0
    assert shared_samples(reb.metrics.exposition()) == shared_samples(served(live.journal_dir))
