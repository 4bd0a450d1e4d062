"""Snapshot sources: every shape `kubectl get -o json|yaml` and kubegpu write, plus real fixtures."""

import gzip
import json
from pathlib import Path

import pytest
import yaml

from kubegpu.sources.documents import load_cluster, snapshot_info_object
from kubegpu.sources.snapshot import read_snapshot

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
FIXTURES = SHARED / "fixtures" / "k8s"

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"pool": "train"}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
       "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
       "status": {"phase": "Running"}}


def load(path):
    return load_cluster(read_snapshot(path))


def test_kind_list_json(tmp_path):
    p = tmp_path / "dump.json"
    p.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}))
    s = load(p)
    assert [n.name for n in s.nodes] == ["gpu-1"] and s.pods[0].key == "ml/p"


def test_typed_list_kinds(tmp_path):
    # kubectl get pods -o json returns kind: List; the API returns PodList; both are lists
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"},
                             "items": [POD]}))
    assert len(load(p).pods) == 1


def test_multi_document_yaml_with_nested_list(tmp_path):
    p = tmp_path / "dump.yaml"
    p.write_text(yaml.safe_dump(NODE) + "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                                  "items": [POD]}) + "---\n")
    s = load(p)
    assert len(s.nodes) == 1 and len(s.pods) == 1


def test_single_object_and_json_array(tmp_path):
    (tmp_path / "node.json").write_text(json.dumps(NODE))
    assert len(load(tmp_path / "node.json").nodes) == 1
    (tmp_path / "arr.json").write_text(json.dumps([NODE, POD]))
    assert len(load(tmp_path / "arr.json").pods) == 1


def test_directory_recursive_and_gzip(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "nodes.json.gz").write_bytes(gzip.compress(json.dumps(NODE).encode()))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(POD))
    (tmp_path / "README.txt").write_text("not a snapshot")
    s = load(tmp_path)
    assert len(s.nodes) == 1 and len(s.pods) == 1


def test_snapshot_info_records_version_and_time(tmp_path):
    info = snapshot_info_object(server_version="v1.33.4", captured_at="2026-11-30T10:00:00Z", source="live:prod")
    p = tmp_path / "snap.json"
    p.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [info, NODE]}))
    s = load(p)
    assert s.server_version == "v1.33.4" and s.captured_at == "2026-11-30T10:00:00Z"
    assert all(o.kind != "SnapshotInfo" for o in s.objects)


def test_events_v1_and_events_k8s_io(tmp_path):
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "ml"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ml"}, "reason": "FailedScheduling",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}
    new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2", "namespace": "ml"},
           "regarding": {"kind": "Pod", "name": "p", "namespace": "ml"}, "reason": "FailedMount",
           "note": "MountVolume.SetUp failed"}
    p = tmp_path / "ev.json"
    p.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD, core, new]}))
    s = load(p)
    evs = s.events_for(s.pods[0])
    assert sorted(e.reason for e in evs) == ["FailedMount", "FailedScheduling"]
    assert {e.text for e in evs} == {core["message"], new["note"]}


@pytest.mark.skipif(not FIXTURES.exists(), reason="../shared/fixtures not present beside the project")
def test_real_rke2_vgpu_node_list():
    s = load(FIXTURES / "node_list_gpu_rke2_vgpu_a16.json")
    assert len(s.nodes) == 1
    info = s.node_gpus[s.nodes[0].name]
    assert info.physical == 1 and info.model == "NVIDIA-A16-4Q"


@pytest.mark.skipif(not FIXTURES.exists(), reason="../shared/fixtures not present beside the project")
def test_real_time_slicing_configmap_is_kept():
    s = load(FIXTURES / "timeslicing_configmap_multi_profile_v100_a100_l40.yaml")
    cms = s.of_kind("ConfigMap")
    assert len(cms) == 1 and cms[0].data
