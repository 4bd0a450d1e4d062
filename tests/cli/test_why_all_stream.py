"""`kubegpu why --all -o json` streams a valid list with node_groups; --nodes adds the node list;
`why` on a bound pod and `--event` on text that is no FailedScheduling message."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "scheduling"))
from sched_builders import node, pod  # noqa: E402

from kubegpu.explain.nodesets import resolve_node_sets  # noqa: E402

TOL = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def _kubegpu(*args):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2])


def _snapshot(tmp_path):
    items = [node(f"g{i}", gpus=8) for i in range(6)]
    items += [pod("busy", node_name="g0", gpus=6, tolerations=TOL)]
    items += [pod(f"small-{i}-{k}", node_name=f"g{i}", gpus=2, tolerations=TOL, owner=("Job", f"small-{i}-{k}"))
              for i in range(1, 6) for k in range(3)]  # every node has 2 GPUs free: moves make a 4-GPU hole
    items += [pod(f"wants4-{k}", ns="ml", gpus=4, tolerations=TOL) for k in range(3)]  # one template
    items += [pod("wants9", ns="ml", gpus=9, tolerations=TOL)]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_all_json_is_one_valid_list_with_grouped_nodes(tmp_path):
    res = _kubegpu("why", "--all", "-o", "json", "--snapshot", _snapshot(tmp_path))
    assert res.returncode == 0, res.stderr
    data = list(resolve_node_sets(json.loads(res.stdout)))  # sets written before are referred to by id
    assert sorted(r["pod"] for r in data) == ["ml/wants4-0", "ml/wants4-1", "ml/wants4-2", "ml/wants9"]
    nine = next(r for r in data if r["pod"] == "ml/wants9")
    assert nine["nodes"] is None
    groups = nine["node_groups"]
    assert sum(g["count"] for g in groups) == 6 and sorted(n for g in groups for n in g["nodes"]) == \
        [f"g{i}" for i in range(6)]
    assert all(not g["fits"] and g["plugin"] == "NodeResourcesFit" for g in groups)


def test_all_nodes_flag_lists_every_node(tmp_path):
    res = _kubegpu("why", "--all", "--nodes", "-o", "json", "--snapshot", _snapshot(tmp_path))
    assert res.returncode == 0, res.stderr
    nine = next(r for r in json.loads(res.stdout) if r["pod"] == "ml/wants9")
    assert [n["name"] for n in nine["nodes"]] == [f"g{i}" for i in range(6)]


def test_replicas_name_themselves_in_their_remedies(tmp_path):
    data = json.loads(_kubegpu("why", "--all", "-o", "json", "--snapshot", _snapshot(tmp_path)).stdout)
    for r in data:
        for remedy in r["remedies"]:
            for other in ("ml/wants4-0", "ml/wants4-1", "ml/wants4-2"):
                if other != r["pod"]:
                    assert other not in remedy["summary"]


def test_why_on_a_running_pod_says_where_it_runs(tmp_path):
    res = _kubegpu("why", "busy", "--snapshot", _snapshot(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "not pending" in res.stdout and "g0" in res.stdout
    data = json.loads(_kubegpu("why", "busy", "--snapshot", _snapshot(tmp_path), "-o", "json").stdout)
    assert data["node"] == "g0" and data["remedies"] == []


def test_event_that_is_not_a_failedscheduling_message_exits_2():
    res = _kubegpu("why", "--event", "Back-off restarting failed container")
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "FailedScheduling" in res.stderr


def test_event_remedies_follow_from_the_reasons():
    res = _kubegpu("why", "-o", "json", "--event",
                   "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, 2 Insufficient cpu.")
    assert res.returncode == 0, res.stderr
    kinds = [r["kind"] for r in json.loads(res.stdout)["remedies"]]
    assert kinds == ["add-toleration", "move-pods"]  # smallest change first
