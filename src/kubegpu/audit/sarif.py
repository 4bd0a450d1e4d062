"""SARIF 2.1.0 for CI code scanning: one run, the catalog as rules, findings as results.

Every result carries a physical location (GitHub code scanning requires
`physicalLocation.artifactLocation.uri` and `region.startLine`): the snapshot file and the line of
the object when the audit read a file, else a stable `k8s://<cluster>/<Kind>/<ns>/<name>` URI
(GitHub displays only file locations, so audit a snapshot file for code scanning). The logical
location ("Kind/ns/name", kind "resource") is kept; partialFingerprints keep a finding's identity
stable across runs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kubegpu import __version__
from kubegpu.audit.catalog import CATALOG, CheckInfo
from kubegpu.audit.engine import AuditReport
from kubegpu.audit.findings import Finding
from kubegpu.audit.origins import Origin, cluster_label, object_uri

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


def _physical(origin: Origin) -> dict[str, Any]:
    return {"artifactLocation": {"uri": origin.uri}, "region": {"startLine": origin.line or 1}}


def _result(f: Finding, index: dict[str, int], origin: Origin) -> dict[str, Any]:
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
        "locations": [{"physicalLocation": _physical(origin),
                       "logicalLocations": [{"fullyQualifiedName": f.object, "name": rest.rsplit("/", 1)[-1],
                                             "kind": "resource"}],
                       "message": {"text": kind}}],
        "partialFingerprints": {"kubegpu/v1": _fingerprint(f)},
        "properties": props,
    }


def to_sarif(report: AuditReport, origins: dict[str, Origin] | None = None,
             fallback: Origin | None = None) -> dict[str, Any]:
    """The SARIF log of one audit; `origins` (object ref -> Origin, see audit.origins) place each result,
    `fallback` places findings about no object of the source (default: a k8s:// URI of the object)."""
    rules = [_rule(c) for c in CATALOG]
    index = {c.id: i for i, c in enumerate(CATALOG)}
    origins = origins or {}

    def origin_of(f: Finding) -> Origin:
        found = origins.get(f.object)
        if found is not None:
            return found
        if fallback is not None and not fallback.uri.startswith("k8s://"):
            return fallback
        return Origin(uri=object_uri(cluster_label(report.source), f.object))

    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kubegpu", "version": __version__, "rules": rules}},
            "invocations": [{"executionSuccessful": True}],
            "results": [_result(f, index, origin_of(f)) for f in report.findings],
            "properties": {"score": report.score, "source": report.source, "summary": report.summary},
        }],
    }
