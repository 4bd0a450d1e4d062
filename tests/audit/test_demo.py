"""Done-when of issue 6 on the embedded demo: every pitfall shows, and the clean variant is clean."""

from __future__ import annotations

from kubegpu.audit import PITFALLS, run_audit


def test_every_pitfall_has_a_warn_or_error_finding_on_the_demo(demo_states):
    report = run_audit(demo_states["pitfalls"])
    shown = {f.pitfall for f in report.findings if f.severity in ("warn", "error")}
    assert shown == set(PITFALLS)


def test_seed_scenario_4_gpu_pod_is_reported_as_fragmentation(demo_states):
    report = run_audit(demo_states["pitfalls"], checks=["KG-101"])
    assert any(f.message.startswith("needs 4 GPUs on one node;") for f in report.findings)


def test_clean_demo_has_nothing_at_warn_or_above(demo_states):
    report = run_audit(demo_states["clean"])
    assert [f.headline for f in report.findings if f.severity in ("warn", "error")] == []
