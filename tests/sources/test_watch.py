"""The live list/watch (sources/watch.py) lists through sources/live.list_kind: pages, and a 410 on a
continue token restarts the list once, as for the CLI (the relist used to have no such restart)."""

from __future__ import annotations

import json

from apiserver.fixtures import renamed_copies
from kubegpu.sources.live import DEFAULT_KINDS
from kubegpu.sources.watch import LiveCache

from .test_live import compact_at_the_first_continue, gpu_node, served

NODES = next(k for k in DEFAULT_KINDS if k.plural == "nodes" and not k.group)


def test_a_relist_whose_continue_token_expires_restarts_once_and_keeps_every_node(apiserver, tmp_path):
    kubeconfig = served(apiserver, renamed_copies(gpu_node(), 7), tmp_path)
    compact_at_the_first_continue(apiserver)
    cache = LiveCache(str(kubeconfig), None, kinds=(NODES,), page_size=3)
    try:
        cache.discover()
        cache.relist(NODES)
    finally:
        cache.close()
    statuses = [(bool(r.query.get("continue")), r.status) for r in apiserver.paths("/api/v1/nodes")]
    assert statuses == [(False, 200), (True, 410), (False, 200), (True, 200), (True, 200)]
    names = sorted(json.loads(bytes(raw))["metadata"]["name"] for raw in cache.items[NODES.label].values())
    assert names == [f"nori-{i:03d}" for i in range(7)]
    assert cache.rv[NODES.label]  # the watch resumes from the list's resourceVersion
    kinds = {json.loads(bytes(raw))["kind"] for raw in cache.items[NODES.label].values()}
    assert kinds == {"Node"}
