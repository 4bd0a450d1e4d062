"""Every check against its fixtures: `tests/audit/<ID>/fail-*.yaml` must trigger it with the exact
messages written in the file's `# expect:` lines; `pass-*.yaml` must not trigger it.

Fixtures are real v1 objects (multi-document YAML) and are collected automatically (Polaris'
success/failure layout, kube-linter's exact-message assertions).
"""

from __future__ import annotations

import pytest

from kubegpu.audit import CATALOG, run_audit

from .audit_support import HERE, load

FIXTURES = sorted(p for p in HERE.glob("KG-*/*.yaml"))


def _expectations(path) -> tuple[list[str], list[str]]:
    messages, objects = [], []
    for line in path.read_text().splitlines():
        if line.startswith("# expect: "):
            messages.append(line[len("# expect: "):])
        elif line.startswith("# expect-object: "):
            objects.append(line[len("# expect-object: "):])
    return messages, objects


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_fixture(path):
    check_id = path.parent.name
    report = run_audit(load(path), checks=[check_id])
    findings = [f for f in report.findings if f.id == check_id]
    if path.name.startswith("fail-"):
        messages, objects = _expectations(path)
        assert messages or objects, f"{path.name} says nothing about what it expects"
        assert findings, f"{check_id} did not fire on {path.name}"
        got = [f.message for f in findings]
        for message in messages:
            assert message in got
        for obj in objects:
            assert obj in [f.object for f in findings]
        assert len(findings) == len(messages) + len(objects)
    else:
        assert path.name.startswith("pass-"), f"fixture names start with pass- or fail-: {path.name}"
        assert findings == []


@pytest.mark.parametrize("check", CATALOG, ids=[c.id for c in CATALOG])
def test_every_check_has_a_passing_and_a_failing_fixture(check):
    names = [p.name for p in (HERE / check.id).glob("*.yaml")]
    assert any(n.startswith("fail-") for n in names), f"{check.id} has no fail-*.yaml"
    assert any(n.startswith("pass-") for n in names), f"{check.id} has no pass-*.yaml"


def test_findings_carry_the_catalog_data():
    report = run_audit(load(HERE / "KG-505" / "fail-rendezvous-port-only.yaml"), checks=["KG-505"])
    (f,) = report.findings
    check = next(c for c in CATALOG if c.id == "KG-505")
    assert (f.pitfall, f.severity, f.title, f.remediation) == (5, "error", check.title, check.remediation)
    assert f.object == "NetworkPolicy/ml/training-ingress"
