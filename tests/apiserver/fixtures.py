"""Real Kubernetes objects to feed the test API server: the shared fixtures and the demo cluster."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

SHARED_K8S = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "k8s"  # beside the project


def shared_objects() -> list[dict]:
    """Every object in the shared k8s fixtures (Lists flattened); empty when they are not here."""
    objects: list[dict] = []
    for path in sorted(SHARED_K8S.glob("*")):
        if path.suffix == ".json":
            docs = [json.loads(path.read_text())]
        elif path.suffix in (".yaml", ".yml"):
            docs = list(yaml.safe_load_all(path.read_text()))
        else:
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
                objects.extend(doc.get("items") or [])
            elif isinstance(doc, dict) and doc.get("kind"):
                objects.append(doc)
    return objects


def demo_objects(variant: str = "pitfalls") -> list[dict]:
    """The embedded demo cluster's objects (a fresh copy: tests mutate them)."""
    from kubegpu.sources.demo import demo_objects as build

    return [copy.deepcopy(o) for o in build(variant)]


def renamed_copies(obj: dict, count: int) -> list[dict]:
    """`count` copies of a real object under new names (pagination needs many objects)."""
    out = []
    for i in range(count):
        o = copy.deepcopy(obj)
        o["metadata"]["name"] = f"{obj['metadata']['name']}-{i:03d}"
        o["metadata"].pop("uid", None)
        o["metadata"].pop("resourceVersion", None)
        labels = o["metadata"].get("labels") or {}
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = o["metadata"]["name"]
        out.append(o)
    return out
