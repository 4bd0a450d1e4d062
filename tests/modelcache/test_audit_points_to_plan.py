"""Pitfalls 8 and 9 point at `kubegpu models plan` with the cluster's numbers; a ModelCache is a cache."""

from __future__ import annotations

from kubegpu.audit.engine import run_audit
from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import Documents, load_cluster

MODEL_CACHE = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "ModelCache", "metadata": {"name": "chat-llama"},
               "spec": {"version": "v1", "files": [{"path": "w", "size": 1, "sha256": "a" * 64}],
                        "source": {"path": "/mnt/models"}}}


def state(extra=()):
    docs = Documents(source="demo+")
    for obj in [*demo_objects("pitfalls"), *extra]:
        docs.add(obj, "demo")
    return load_cluster(docs)


def findings(st, check_id):
    return [f for f in run_audit(st).findings if f.id == check_id]


def test_kg_901_and_801_remediation_names_models_plan_and_replica_count():
    st = state()
    for check_id in ("KG-901", "KG-801"):
        found = findings(st, check_id)
        assert found, check_id
        for f in found:
            assert "kubegpu models plan" in f.remediation and "replicas" in f.remediation
            assert "5 s per replica over NFS at 200 MB/s" in f.remediation


def test_a_modelcache_counts_as_a_local_cache_for_kg_901():
    assert findings(state(), "KG-901")
    assert not findings(state([MODEL_CACHE]), "KG-901")
