"""JUnit XML for CI: one test suite per pitfall, one test case per finding (and one passing case
per clean check), so CI dashboards count failures the way they count failing tests."""

from __future__ import annotations

from collections import defaultdict
from xml.etree import ElementTree as ET

from kubegpu.audit.catalog import CATALOG_BY_ID, PITFALLS
from kubegpu.audit.engine import AuditReport
from kubegpu.audit.findings import Finding, Severity


def _finding_text(f: Finding) -> str:
    lines = [f.message, "", f"Fix: {f.remediation}"]
    lines += [f"Evidence: {e}" for e in f.evidence]
    if f.patch is not None:
        lines += ["", f"Patch ({f.patch.kind}):", f.patch.content]
    return "\n".join(lines)


def to_junit(report: AuditReport, *, fail_on: Severity = Severity.WARN) -> str:
    """The JUnit XML document; findings at or above `fail_on` are failures, the rest pass."""
    by_check: dict[str, list[Finding]] = defaultdict(list)
    for f in report.findings:
        by_check[f.id].append(f)
    suites: dict[int, list[ET.Element]] = defaultdict(list)
    for check_id in report.checks_run:
        check = CATALOG_BY_ID[check_id]
        classname = f"kubegpu.audit.pitfall{check.pitfall}.{check.id}"
        findings = by_check.get(check_id, [])
        if not findings:
            suites[check.pitfall].append(ET.Element("testcase", name=f"{check.id} {check.title}",
                                                    classname=classname, time="0"))
        for f in findings:
            case = ET.Element("testcase", name=f"{f.id} {f.object}", classname=classname, time="0")
            if f.level >= fail_on:
                failure = ET.SubElement(case, "failure", message=f.message, type=f.severity)
                failure.text = _finding_text(f)
            else:
                out = ET.SubElement(case, "system-out")
                out.text = _finding_text(f)
            suites[check.pitfall].append(case)
    root = ET.Element("testsuites", name="kubegpu audit")
    total = failures = 0
    for pitfall in sorted(suites):
        cases = suites[pitfall]
        failed = sum(1 for c in cases if c.find("failure") is not None)
        suite = ET.SubElement(root, "testsuite", name=f"pitfall {pitfall}: {PITFALLS[pitfall]}",
                              tests=str(len(cases)), failures=str(failed), errors="0", skipped="0", time="0")
        suite.extend(cases)
        total += len(cases)
        failures += failed
    root.set("tests", str(total))
    root.set("failures", str(failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
