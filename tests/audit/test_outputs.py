"""SARIF 2.1.0 (validated against the schema subset in this folder) and JUnit XML outputs."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from kubegpu.audit import run_audit
from kubegpu.audit.findings import Severity
from kubegpu.audit.junit import to_junit
from kubegpu.audit.sarif import to_sarif

from .audit_support import HERE, load

SCHEMA = json.loads((HERE / "sarif-2.1.0-schema.json").read_text())


@pytest.fixture(scope="module")
def report():
    return run_audit(load(HERE / "KG-802" / "fail-mount-timeouts-all-versions.yaml"))


def test_sarif_validates_and_maps_levels(report):
    log = to_sarif(report)
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    mount = by_rule["KG-802"]
    assert mount["level"] == "error"
    assert rules[mount["ruleIndex"]]["id"] == "KG-802"
    assert mount["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].startswith("Pod/inference/chat-")
    assert {r["level"] for r in run["results"]} <= {"error", "warning", "note"}


def test_sarif_of_the_demo_validates(demo_states):
    log = to_sarif(run_audit(demo_states["pitfalls"]))
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    fingerprints = [r["partialFingerprints"]["kubegpu/v1"] for r in log["runs"][0]["results"]]
    assert len(fingerprints) == len(set(fingerprints))


def test_schema_rejects_what_sarif_forbids(report):
    log = to_sarif(report)
    log["runs"][0]["results"][0]["level"] = "warn"  # SARIF says "warning"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(log)


def test_junit_counts_failures_per_pitfall(report):
    root = ET.fromstring(to_junit(report, fail_on=Severity.ERROR))
    failures = root.findall(".//failure")
    assert int(root.get("failures")) == len(failures) == sum(1 for f in report.findings if f.severity == "error")
    assert int(root.get("tests")) == len(root.findall(".//testcase"))
    names = [s.get("name") for s in root.findall("testsuite")]
    assert "pitfall 8: Shared-filesystem model mounts" in names
    case = next(c for c in root.iter("testcase") if c.get("name") == "KG-802 Pod/inference/chat-1")
    assert case.find("failure").get("message") == "timed out mounting volumes [model] (6x)"


def test_junit_warn_threshold_fails_warnings_too(report):
    root = ET.fromstring(to_junit(report, fail_on=Severity.WARN))
    assert int(root.get("failures")) == sum(1 for f in report.findings if f.severity in ("warn", "error"))
