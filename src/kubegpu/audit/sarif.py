"""SARIF 2.1.0 for CI code scanning: one run, the catalog as rules, findings as results.

Kubernetes objects are not files, so results carry logical locations ("Kind/ns/name", kind
"resource"); partialFingerprints keep a finding's identity stable across runs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kubegpu import __version__
from kubegpu.audit.catalog import CATALOG, CheckInfo
from kubegpu.audit.engine import AuditReport
from kubegpu.audit.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warn": "warning", "info": "note"}


def _rule(check: CheckInfo) -> dict[str, Any]:
    return {
        "id": check.id,
        "name": "".join(w.capitalize() for w in check.title.replace("/", " ").replace("-", " ").split()
                        if w.isalnum())[:120] or check.id,
        "shortDescription": {"text": check.title},
        "fullDescription": {"text": check.rationale},
        "help": {"text": check.remediation, "markdown": f"**Fix:** {check.remediation}"},
        "defaultConfiguration": {"level": LEVELS[check.severity]},
        "properties": {"pitfall": check.pitfall, "tags": ["kubernetes", "gpu", f"pitfall-{check.pitfall}"]},
    }


def _fingerprint(f: Finding) -> str:
    return hashlib.sha256(f"{f.id}|{f.object}|{f.message}".encode()).hexdigest()[:32]


def _result(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    kind, _, rest = f.object.partition("/")
    props: dict[str, Any] = {"pitfall": f.pitfall, "severity": f.severity, "remediation": f.remediation}
    if f.evidence:
        props["evidence"] = list(f.evidence)
    if f.patch is not None:
        props["patch"] = {"kind": f.patch.kind, "content": f.patch.content,
                          **({"target": f.patch.target} if f.patch.target else {})}
    return {
        "ruleId": f.id,
        "ruleIndex": index[f.id],
        "level": LEVELS[f.severity],
        "message": {"text": f"{f.object}: {f.message}"},
        "locations": [{"logicalLocations": [{"fullyQualifiedName": f.object, "name": rest.rsplit("/", 1)[-1],
                                             "kind": "resource"}],
                       "message": {"text": kind}}],
        "partialFingerprints": {"kubegpu/v1": _fingerprint(f)},
        "properties": props,
    }


def to_sarif(report: AuditReport) -> dict[str, Any]:
    """The SARIF log of one audit."""
    rules = [_rule(c) for c in CATALOG]
    index = {c.id: i for i, c in enumerate(CATALOG)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kubegpu", "version": __version__, "rules": rules}},
            "invocations": [{"executionSuccessful": True}],
            "results": [_result(f, index) for f in report.findings],
            "properties": {"score": report.score, "source": report.source, "summary": report.summary},
        }],
    }
