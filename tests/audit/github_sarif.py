"""GitHub code scanning's documented requirements for an uploaded SARIF file, as a checker.

Sources: GitHub's "SARIF support for code scanning" (ruleId stable, partialFingerprints, file paths)
and the upload limits of the code-scanning SARIF REST endpoint (runs per file 20, results per run
25,000, rules per run 25,000, locations per result 1,000, tags per rule 20); the sarif-sdk
validator's GitHub rules: GH1001/GH1017 a physical location with an artifact URI on every result,
GH1003 `region.startLine`, GH1005 relative or file:// URIs for locations GitHub displays, GH1007 a
flattened `message.text`, GH2012 rules with shortDescription, fullDescription and help.text.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

LIMITS = {"runs": 20, "results": 25_000, "rules": 25_000, "locations": 1_000, "tags": 20}


def github_problems(log: dict[str, Any], *, displayable: bool) -> list[str]:
    """Every way `log` breaks GitHub's requirements (empty: it uploads and displays).

    `displayable`: also require file locations (GitHub shows only results in files)."""
    out: list[str] = []
    if log.get("version") != "2.1.0":
        out.append("version must be 2.1.0")
    runs = log.get("runs") or []
    if len(runs) > LIMITS["runs"]:
        out.append(f"{len(runs)} runs > {LIMITS['runs']}")
    for r, run in enumerate(runs):
        driver = run.get("tool", {}).get("driver", {})
        if not driver.get("name"):
            out.append(f"run {r}: tool.driver.name missing")
        rules = driver.get("rules") or []
        if len(rules) > LIMITS["rules"]:
            out.append(f"run {r}: {len(rules)} rules")
        ids = [rule.get("id") for rule in rules]
        for rule in rules:
            for key in ("shortDescription", "fullDescription", "help"):
                if not (rule.get(key) or {}).get("text", "").strip():
                    out.append(f"rule {rule.get('id')}: {key}.text missing (GH2012)")
            if len((rule.get("properties") or {}).get("tags", [])) > LIMITS["tags"]:
                out.append(f"rule {rule.get('id')}: more than {LIMITS['tags']} tags")
        results = run.get("results") or []
        if len(results) > LIMITS["results"]:
            out.append(f"run {r}: {len(results)} results")
        for i, res in enumerate(results):
            where = f"run {r} result {i}"
            if not res.get("ruleId"):
                out.append(f"{where}: ruleId missing")
            elif "ruleIndex" in res and (res["ruleIndex"] >= len(ids) or ids[res["ruleIndex"]] != res["ruleId"]):
                out.append(f"{where}: ruleIndex does not point at rule {res['ruleId']}")
            if not (res.get("message") or {}).get("text"):
                out.append(f"{where}: message.text missing (GH1007)")
            if not res.get("partialFingerprints"):
                out.append(f"{where}: partialFingerprints missing (duplicate alerts)")
            locations = res.get("locations") or []
            if not locations:
                out.append(f"{where}: no locations (GH1001)")
            if len(locations) > LIMITS["locations"]:
                out.append(f"{where}: {len(locations)} locations")
            for loc in locations:
                phys = loc.get("physicalLocation") or {}
                uri = (phys.get("artifactLocation") or {}).get("uri")
                if not uri:
                    out.append(f"{where}: physicalLocation.artifactLocation.uri missing (GH1001/GH1017)")
                    continue
                if not isinstance((phys.get("region") or {}).get("startLine"), int):
                    out.append(f"{where}: region.startLine missing (GH1003)")
                scheme = urlparse(uri).scheme
                if displayable and scheme not in ("", "file"):
                    out.append(f"{where}: {uri} is not a file path (GH1005)")
    return out
