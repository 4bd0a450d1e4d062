"""`kubegpu share`: candidates by the audit's classes, the replayed prediction, the config, bad input."""

import json

import pytest

from tests.face.support import run

from .cluster import node, pod, three_node_pool


def snapshot(tmp_path, objs):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return str(path)


def share_json(*args):
    r = run("share", *args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_replay_packs_inference_pods_and_frees_whole_gpus(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices: [{pool: inf, perGpuHour: 3, currency: EUR}]\n")
    data = share_json("--snapshot", snapshot(tmp_path, three_node_pool()), "--pool", "inf", "--prices", str(prices))
    assert sorted(c["pod"] for c in data["candidates"]) == [f"serving/embed-{i}" for i in range(10)]
    p = data["prediction"]
    assert p["shared_nodes"] == ["node-c"]                   # it already holds only candidates
    assert p["candidates_placed"] == 10 and p["candidate_gpus"] == {"before": 10, "after": 3}   # ceil(10 / 4)
    assert p["whole_gpus_free"] == {"before": 6, "after": 8} and p["gpus_freed"] == 2
    assert p["pods_fit_now"] == {"before": 1, "after": 2}    # a 4-GPU pod fits on node-a and on node-b
    assert p["moved_pods"] == 8 and p["displaced_not_placed"] == []
    assert p["shared_free_gpus"] == pytest.approx(8 - 10 / 4)
    assert p["saves_gpu_hours_per_day"] == 48
    assert p["saves_per_day"] == {"amount": 144.0, "currency": "EUR", "per": "day", "source": "prices file " + str(prices)}
    assert data["config"]["valid"] and data["config"]["errors"] == []
    assert "nvidia.com/device-plugin.config=" in data["config"]["apply"][2] and "node-c" in data["config"]["apply"][2]
    ts = data["config"]["config"]["sharing"]["timeSlicing"]
    assert ts["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}] and ts["failRequestsGreaterThanOne"] is True


def test_more_replicas_need_fewer_gpus(tmp_path):
    data = share_json("--snapshot", snapshot(tmp_path, three_node_pool()), "--replicas", "10")
    assert data["prediction"]["candidate_gpus"]["after"] == 1 and data["replicas"] == 10


def test_training_and_large_pods_are_not_candidates(tmp_path):
    objs = [node("n1"),
            pod("job-1", gpus=1, owner=("Job", "j"), node_name="n1"),               # training class
            pod("big-1", gpus=1, owner=("ReplicaSet", "big"), node_name="n1", memory="200Gi"),   # not small
            pod("bare-1", gpus=1, owner=None, node_name="n1")]                       # class other
    data = share_json("--snapshot", snapshot(tmp_path, objs))
    assert data["candidates"] == [] and data["config"] is None and data["prediction"] is None
    assert "no sharing candidates" in data["message"]
    data = share_json("--snapshot", snapshot(tmp_path, objs), "--max-memory", "256Gi")
    assert [c["pod"] for c in data["candidates"]] == ["serving/big-1"]


def test_unpriced_cluster_says_gpu_hours(tmp_path):
    objs = three_node_pool()
    for o in objs:
        if o["kind"] == "Node":
            o["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "unknown-box"
    data = share_json("--snapshot", snapshot(tmp_path, objs))
    assert data["prediction"]["saves_per_day"] is None and data["prediction"]["saves_gpu_hours_per_day"] == 48
    assert "GPU-hours/day" in run("share", "--snapshot", snapshot(tmp_path, objs)).stdout


def test_table_names_risks_and_config(tmp_path):
    text = run("share", "--snapshot", snapshot(tmp_path, three_node_pool())).stdout
    for words in ("renameByDefault", "failRequestsGreaterThanOne", "replicas: 4", "no memory or fault isolation",
                  "counts replicas as GPUs", "noisy neighbours", "GPUs free for whole-GPU work  6 -> 8"):
        assert words in text, words


@pytest.mark.parametrize("args", [["--replicas", "1"], ["--replicas", "x"], ["--max-cpu", "lots"]])
def test_bad_arguments_are_one_line_exit_2(args):
    r = run("share", "--demo", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_doctor_ranks_sharing_among_its_fixes(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices: [{pool: inf, perGpuHour: 3, currency: EUR}]\n")
    r = run("doctor", "--snapshot", snapshot(tmp_path, three_node_pool()), "--prices", str(prices), "-o", "json")
    assert r.returncode == 0, r.stderr
    fixes = json.loads(r.stdout)["sections"]["money"]["fix_first"]
    share = next(f for f in fixes if f["kind"] == "share")
    assert share["saves_gpu_hours_per_day"] == 48 and share["saves_per_day"]["amount"] == 144.0
    assert share["one_off_gpu_hours"] == 0 and share["command"] == "kubegpu share"
    saved = [f["saves_per_day"]["amount"] for f in fixes]
    assert saved == sorted(saved, reverse=True)
