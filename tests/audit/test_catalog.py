"""The catalog is complete, matches the registry, and docs/audit-checks.md is generated from it."""

from __future__ import annotations

import re
from pathlib import Path

from kubegpu.audit import CATALOG, PITFALLS
from kubegpu.audit.checks import REGISTRY
from kubegpu.audit.docs import catalog_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit-checks.md"


def test_registry_and_catalog_list_the_same_checks():
    assert list(REGISTRY) == [c.id for c in CATALOG]


def test_every_check_has_its_metadata():
    for c in CATALOG:
        assert re.fullmatch(rf"KG-{c.pitfall}\d\d", c.id), c.id
        assert c.severity in ("info", "warn", "error")
        assert c.title and c.rationale and c.remediation
        assert REGISTRY[c.id].__doc__, f"{c.id}'s function has no docstring"


def test_every_pitfall_has_a_check_at_warn_or_above():
    for pitfall in PITFALLS:
        assert any(c.pitfall == pitfall and c.severity != "info" for c in CATALOG), pitfall


def test_docs_table_is_current():
    assert DOC.read_text() == catalog_markdown(), (
        "docs/audit-checks.md is stale: regenerate with "
        "`python -c 'from kubegpu.audit.docs import catalog_markdown; print(catalog_markdown(), end=\"\")' "
        "> docs/audit-checks.md`")
