"""`--sustained` across `--once` runs: the "stranded above the threshold since" time is kept in the budget
ledger, so a CronJob's separate processes see how long stranded GPUs have stayed high (fake clock)."""

from __future__ import annotations

from datetime import timedelta

from liveworld import START, FakeTime

from kubegpu.rebalance.ledger import Ledger

SUSTAINED = 1800.0


def once(world, minutes: float, threshold: float):
    """One `--once` run: a new Rebalancer (nothing in memory) at START + minutes, sharing the journal dir."""
    reb = world.rebalancer(FakeTime(start=START + timedelta(minutes=minutes)), min_pending_age_s=10 ** 9,
                           stranded_above=threshold, sustained_s=SUSTAINED)
    return reb.round()


def test_once_runs_honour_sustained_through_the_ledger(live):
    first = once(live, 0, 1.0)
    assert first.stranded["before"] > 1.0 and first.status == "nothing-to-do", first.message
    assert Ledger(live.journal_dir).stranded_since(1.0) == START
    second = once(live, 20, 1.0)
    assert second.stranded["sustained_seconds"] == 1200 and second.status == "nothing-to-do"
    third = once(live, 31, 1.0)                  # 31 min above 1 GPU, seen by three processes
    assert third.stranded["sustained_seconds"] == 31 * 60
    assert third.status == "moved" and third.plans[0].trigger == "stranded", third.message
    live.assert_clean()


def test_a_reading_below_the_threshold_or_a_new_threshold_restarts_the_timer(live):
    once(live, 0, 1.0)
    assert once(live, 10, 1000.0).stranded["sustained_seconds"] == 0        # below 1000: not above
    assert Ledger(live.journal_dir).stranded_since(1000.0) is None
    assert Ledger(live.journal_dir).stranded_since(1.0) is None            # the last round measured 1000
    again = once(live, 40, 1.0)                                              # starts over at minute 40
    assert again.stranded["sustained_seconds"] == 0 and again.status == "nothing-to-do"
    assert Ledger(live.journal_dir).stranded_since(1.0) == START + timedelta(minutes=40)
