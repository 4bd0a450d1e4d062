"""Real objects to mutate: a trimmed demo cluster (every kind it has) and the shared k8s fixtures."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

import yaml

SHARED_K8S = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "k8s"


@lru_cache(maxsize=1)
def base_objects() -> tuple[dict, ...]:
    """The demo with its GPU nodes, four CPU nodes and their pods (small enough to run fast)."""
    from kubegpu.sources.demo import demo_objects

    objs = [o for o in demo_objects("pitfalls") if o["kind"] != "SnapshotInfo"]
    nodes = [o for o in objs if o["kind"] == "Node"]
    gpu = [n for n in nodes if "nvidia.com/gpu" in n.get("status", {}).get("allocatable", {})]
    keep = {n["metadata"]["name"] for n in gpu + [n for n in nodes if n not in gpu][:4]}
    out = []
    for o in objs:
        if o["kind"] == "Node" and o["metadata"]["name"] not in keep:
            continue
        if o["kind"] == "Pod" and o.get("spec", {}).get("nodeName") not in (None, *keep):
            continue
        out.append(o)
    for path in sorted(SHARED_K8S.glob("*.json")) + sorted(SHARED_K8S.glob("*.yaml")):
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
        for doc in docs:
            items = doc.get("items", [doc]) if isinstance(doc, dict) else []
            out.extend(i for i in items if isinstance(i, dict) and i.get("kind"))
    return tuple(out)


def fresh() -> list[dict]:
    return copy.deepcopy(list(base_objects()))


def as_list(objects: list) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": objects}
