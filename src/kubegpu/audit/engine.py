"""Run the audit: every enabled check over one state, suppressions applied, findings scored.

Score (0-100): each check run earns 1 when its worst finding is below warn, 0.5 at warn, 0 at
error; the score is the mean. Info findings never cost points; a clean cluster scores 100.
"""

from __future__ import annotations

import msgspec

from kubegpu.audit.catalog import CATALOG, CATALOG_BY_ID, PITFALLS, CheckInfo
from kubegpu.audit.checks import REGISTRY
from kubegpu.audit.config import AuditConfig, excluded, ignored_by_annotation, pattern_matches, split_object
from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Finding, Hit, Severity
from kubegpu.errors import UsageError
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.namespaces import NamespaceScope, ref_scope

CREDIT = {None: 1.0, Severity.INFO: 1.0, Severity.WARN: 0.5, Severity.ERROR: 0.0}


class AuditReport(msgspec.Struct, kw_only=True):
    """The audit JSON: `findings` and `score` are the DESIGN contract; the rest extends it."""

    findings: list[Finding]
    score: int
    summary: dict[str, int]
    checks_run: list[str]
    suppressed: int = 0
    source: str = ""
    namespace: str | None = None

    def worst(self) -> Severity | None:
        return max((f.level for f in self.findings), default=None)

    def failing(self, threshold: Severity) -> list[Finding]:
        return [f for f in self.findings if f.level >= threshold]


def select_checks(config: AuditConfig, only: list[str] | None = None) -> list[CheckInfo]:
    """Enabled checks, optionally narrowed to IDs / `pitfall:N` patterns."""
    if only:
        for p in only:
            if not any(pattern_matches(p, c) for c in CATALOG):
                raise UsageError(f"unknown check {p!r} (see `kubegpu audit --list-checks`)")
    return [c for c in CATALOG if config.enabled(c) and (not only or any(pattern_matches(p, c) for p in only))]


def _annotations_for(state: ClusterState, ref: str) -> list[dict[str, str]]:
    """The annotations that may suppress a finding on `ref`: its own, and a pod's controller's."""
    kind, ns, name = split_object(ref)
    obj = state.get(kind, ns, name)
    if obj is None:
        return []
    out = [obj.annotations]
    if isinstance(obj, Pod):
        top = state.top_controller(obj)
        parent = state.get(top[0], ns, top[1]) if top else None
        if parent is not None:
            out.append(parent.annotations)
    return out


def _finding(check: CheckInfo, severity: Severity, hit: Hit) -> Finding:
    return Finding(id=check.id, pitfall=check.pitfall, severity=severity.label, object=hit.object,
                   message=hit.message, remediation=hit.remediation or check.remediation, title=check.title,
                   evidence=hit.evidence, patch=hit.patch, scope=ref_scope(hit.object))


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Grouped by pitfall, the group with the worst finding first; worst first inside a group."""
    worst: dict[int, int] = {}
    for f in findings:
        worst[f.pitfall] = max(worst.get(f.pitfall, 0), f.level)
    return sorted(findings, key=lambda f: (-worst[f.pitfall], f.pitfall, -f.level, f.id, f.object, f.message))


def run_audit(state: ClusterState, config: AuditConfig | None = None, *,
              checks: list[str] | None = None, table=None, pending=None, frag=None,
              scope: NamespaceScope = NamespaceScope()) -> AuditReport:
    """Run the selected checks over `state` and score the result.

    Checks always see the whole cluster; with a namespace `scope` only findings about objects of
    that namespace, and cluster-scoped findings, are reported and scored.
    `table`, `pending` and `frag`: results the caller already has (see AuditContext)."""
    config = config or AuditConfig()
    ctx = AuditContext(state, config, table=table, pending=pending, frag=frag)
    findings: list[Finding] = []
    credits: list[float] = []
    suppressed = 0
    selected = select_checks(config, checks)
    for check in selected:
        severity = config.severity_of(check)
        worst: Severity | None = None
        for hit in REGISTRY[check.id](ctx):
            if not scope.includes_ref(hit.object):
                continue
            if excluded(config, check, hit.object) or any(
                    ignored_by_annotation(a, check) for a in _annotations_for(state, hit.object)):
                suppressed += 1
                continue
            findings.append(_finding(check, severity, hit))
            worst = severity if worst is None else max(worst, severity)
        credits.append(CREDIT[worst])
    findings = sort_findings(findings)
    summary = {s.label: sum(1 for f in findings if f.level == s) for s in (Severity.ERROR, Severity.WARN,
                                                                           Severity.INFO)}
    score = round(100 * sum(credits) / len(credits)) if credits else 100
    return AuditReport(findings=findings, score=score, summary=summary, checks_run=[c.id for c in selected],
                       suppressed=suppressed, source=state.source, namespace=scope.namespace)


__all__ = ["AuditReport", "CATALOG_BY_ID", "PITFALLS", "run_audit", "select_checks", "sort_findings"]
