"""docs/audit-checks.md, generated from the catalog (a test fails when the file is stale)."""

from __future__ import annotations

from kubegpu.audit.catalog import CATALOG, PITFALLS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalog_markdown() -> str:
    lines = [
        "# Audit checks",
        "",
        "Generated from `src/kubegpu/audit/catalog.py`; do not edit by hand. `kubegpu audit --list-checks` prints "
        "the same list.",
        "",
        "Suppress a check on one object with the annotation `kubegpu.io/ignore: KG-101,KG-202` (or `pitfall:3`, "
        "`*`); suppress by kind / namespace / name and override severities or parameters in `--config`.",
        "",
        "| ID | Pitfall | Severity | Title | Remediation | Parameters |",
        "|---|---|---|---|---|---|",
    ]
    for c in CATALOG:
        params = ", ".join(f"`{k}={v}`" for k, v in c.params.items()) or "-"
        lines.append(f"| {c.id} | {c.pitfall} {_cell(PITFALLS[c.pitfall])} | {c.severity} | {_cell(c.title)} | "
                     f"{_cell(c.remediation)} | {params} |")
    lines += ["", "## Why each check exists", ""]
    for c in CATALOG:
        lines.append(f"- **{c.id}** {_cell(c.title)}: {_cell(c.rationale)}")
    return "\n".join(lines) + "\n"
