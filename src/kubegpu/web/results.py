"""Simulation results for the dashboard: JSON files written by `kubegpu simulate run -o json`
(an object with a "scenario" key) or `simulate sweep -o json` (a list of {params, seed, result}).

Read on request (the folder changes as runs finish); unreadable files are listed, not fatal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

MAX_FILES = 200
MAX_BYTES = 20 * 1024 * 1024


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def summary_row(name: str, result: dict, params: dict | None = None) -> dict:
    """The columns the results page shows (None where a run did not report a field)."""
    return {
        "file": name, "scenario": result.get("scenario"), "seed": result.get("seed"), "params": params or {},
        "duration_s": result.get("duration_s"),
        "scale_ups": _get(result, "autoscaler", "scale_ups"), "scale_downs": _get(result, "autoscaler", "scale_downs"),
        "cycles_per_day": _get(result, "autoscaler", "cycles_per_day"),
        "billed_node_hours": _get(result, "autoscaler", "billed_node_hours"),
        "cost": _get(result, "cost", "total"), "currency": _get(result, "cost", "currency"),
        "wait_p95": _get(result, "pods", "wait_seconds", "p95"),
        "preemptions": _get(result, "preemption", "count"),
        "gpu_hours_lost": _get(result, "preemption", "gpu_hours_lost"),
        "allocation_mean": _get(result, "utilization", "allocation_mean"),
    }


def read_results(folder: str) -> tuple[list[dict], list[str]]:
    """(rows, problems): one row per run found in the folder's *.json files."""
    root = Path(folder)
    if not root.is_dir():
        return [], [f"{folder}: not a folder"]
    rows: list[dict] = []
    problems: list[str] = []
    for path in sorted(root.glob("*.json"))[:MAX_FILES]:
        try:
            if path.stat().st_size > MAX_BYTES:
                problems.append(f"{path.name}: larger than {MAX_BYTES // 1024 // 1024} MiB, skipped")
                continue
            data = msgspec.json.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError) as err:
            problems.append(f"{path.name}: {err}")
            continue
        if isinstance(data, dict) and "scenario" in data:
            rows.append(summary_row(path.name, data))
        elif isinstance(data, list):
            found = [summary_row(path.name, item["result"], item.get("params")) for item in data
                     if isinstance(item, dict) and isinstance(item.get("result"), dict)
                     and "scenario" in item["result"]]
            rows.extend(found)
            if not found:
                problems.append(f"{path.name}: no simulate results in it")
        else:
            problems.append(f"{path.name}: no \"scenario\" key (not a simulate run result)")
    return rows, problems
