"""The GPU-cluster audit: ten pitfalls, one catalog of checks, findings with the fix.

    report = run_audit(state, load_config("audit.yaml"))
    report.findings, report.score
"""

from kubegpu.audit.catalog import CATALOG, CATALOG_BY_ID, PITFALLS, CheckInfo
from kubegpu.audit.config import AuditConfig, load_config, parse_config
from kubegpu.audit.engine import AuditReport, run_audit
from kubegpu.audit.findings import Finding, Hit, Patch, Severity

__all__ = ["CATALOG", "CATALOG_BY_ID", "PITFALLS", "AuditConfig", "AuditReport", "CheckInfo", "Finding", "Hit",
           "Patch", "Severity", "load_config", "parse_config", "run_audit"]
