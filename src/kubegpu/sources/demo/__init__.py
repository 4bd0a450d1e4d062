"""The embedded demo cluster behind `--demo` and `--demo clean`.

`demo_objects("pitfalls")` is the seed scenario (40 nodes, 10x 8 A100, 70/80 GPUs allocated
with one free GPU per GPU node, five pending GPU pods, every one of the ten pitfalls);
`demo_objects("clean")` is the same cluster with every pitfall remedied. Both are plain v1
objects exactly as `kubectl get ... -o json` would list them, built deterministically.
See docs/demo-cluster.md for the layout and the pitfall -> object map.
"""

from __future__ import annotations

import msgspec

from kubegpu.errors import UsageError
from kubegpu.sources.demo.addons import addon_objects, gang_scheduler_objects
from kubegpu.sources.demo.builders import NOW, ago, rfc3339
from kubegpu.sources.demo.events import failed_mount_events
from kubegpu.sources.demo.inference import inference_objects
from kubegpu.sources.demo.nodes import node_objects
from kubegpu.sources.demo.pending import pending_objects
from kubegpu.sources.demo.placement import CpuPlacer
from kubegpu.sources.demo.pods import daemonset_pods
from kubegpu.sources.demo.status import finalize
from kubegpu.sources.demo.storage import MODELS_PVC, storage_objects
from kubegpu.sources.demo.system import system_objects
from kubegpu.sources.demo.training import training_objects

VARIANTS = ("pitfalls", "clean")
SERVER_VERSION = {"major": "1", "minor": "35", "gitVersion": "v1.35.2"}
# cluster-scoped and configuration kinds first, as a dump script would list them
_KIND_ORDER = ("SnapshotInfo", "Namespace", "PriorityClass", "Node", "StorageClass", "PersistentVolume",
               "PersistentVolumeClaim")


def snapshot_info(variant: str) -> dict:
    """The record kubegpu snapshots keep of where and when the objects were captured."""
    return {"apiVersion": "kubegpu.io/v1", "kind": "SnapshotInfo", "metadata": {"name": "demo"},
            "serverVersion": dict(SERVER_VERSION), "capturedAt": rfc3339(NOW), "source": f"demo:{variant}"}


def demo_objects(variant: str = "pitfalls") -> list[dict]:
    """Every object of the demo cluster `variant` ("pitfalls" or "clean"), SnapshotInfo first.

    Raises UsageError for an unknown variant. Each call builds fresh dicts: callers may mutate them.
    """
    if variant not in VARIANTS:
        raise UsageError(f"unknown demo variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    nodes = node_objects(variant)
    # per CPU node: kube-proxy, aws-node, ebs-csi-node, node-exporter (+ node-local-dns in clean)
    placer = CpuPlacer(nodes, daemon_cpu_milli=260, daemon_memory=256 * 2**20)
    objs = [snapshot_info(variant), *nodes]
    objs += addon_objects(variant, placer)
    objs += system_objects(variant, nodes, placer)
    objs += storage_objects(variant)
    objs += inference_objects(variant, placer)
    objs += gang_scheduler_objects(variant, placer)
    objs += training_objects(variant)
    if variant == "pitfalls":
        objs += pending_objects()
    for ds in [o for o in objs if o["kind"] == "DaemonSet"]:
        objs += daemonset_pods(ds, nodes, started=ago(days=6, hours=len(ds["metadata"]["name"]) % 5))
    stuck = [o for o in objs if o["kind"] == "Pod" and o["status"]["phase"] == "Pending" and o["spec"].get("nodeName")]
    for pod in stuck:
        claims = [v["name"] for v in pod["spec"]["volumes"]
                  if v.get("persistentVolumeClaim", {}).get("claimName") == MODELS_PVC]
        objs += failed_mount_events(pod, claims[0], pv_name="models-nfs")
    objs.sort(key=lambda o: _KIND_ORDER.index(o["kind"]) if o["kind"] in _KIND_ORDER else len(_KIND_ORDER))
    # a JSON round trip unshares the dicts the builders reuse, so callers may mutate freely
    return msgspec.json.decode(msgspec.json.encode(finalize(objs)))


__all__ = ["SERVER_VERSION", "VARIANTS", "demo_objects", "snapshot_info"]
