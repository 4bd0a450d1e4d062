"""`kubegpu defrag` from the command line: the plan as JSON and tables, goals, usage errors, exit codes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "defrag"))
from builders import fragmented, gpu_node, pod  # noqa: E402


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "defrag", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture
def dump(tmp_path):
    path = tmp_path / "cluster.json"
    items = fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_plan_for_a_pod_as_json_and_the_after_state_satisfies_why(dump, tmp_path):
    after = tmp_path / "after.json"
    r = run("--snapshot", str(dump), "--for", "ml/big", "-o", "json", "--write-after", str(after))
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["feasible"] and len(plan["moves"]) == 3
    assert {"pod", "from", "to"} <= set(plan["moves"][0])
    assert plan["after"]["fits_by_size"]["4"] == 1 and plan["before"]["fits_by_size"]["4"] == 0
    assert plan["applied"] is False
    why = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "why", "big", "-n", "ml", "--snapshot",
                          str(after), "-o", "json"], capture_output=True, text=True, timeout=120)
    if why.returncode == 0 or why.stdout.strip().startswith("{"):  # `why` lands with the scheduling core
        assert json.loads(why.stdout)["schedulable"] is True


def test_table_says_it_is_a_dry_run(dump):
    r = run("--snapshot", str(dump), "--size", "4")
    assert r.returncode == 0, r.stderr
    assert "dry run, nothing changed" in r.stdout and "cordon gpu-" in r.stdout


def test_no_plan_exits_1_and_says_why(dump):
    r = run("--snapshot", str(dump), "--for", "ml/big", "--max-moves", "1", "-o", "json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["feasible"] is False


@pytest.mark.parametrize("args, text", [
    ((), "choose one goal"),
    (("--size", "4", "--empty-nodes", "1"), "choose one goal"),
    (("--size", "4", "--apply"), "--apply acts on a live cluster"),
    (("--for", "ml/nope"), "no pod or gang named"),
])
def test_usage_errors_are_one_line_with_exit_2(dump, args, text):
    r = run("--snapshot", str(dump), *args)
    assert r.returncode == 2
    assert text in r.stderr and "Traceback" not in r.stderr


def test_demo_cluster_plans(tmp_path):
    r = run("--demo", "--size", "4", "--allow-local-storage", "-o", "json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["feasible"], plan["message"]
    assert plan["after"]["fits_by_size"]["4"] >= plan["before"]["fits_by_size"]["4"] + 1
    movable = {p["pod"]: p for p in plan["pods"]}
    assert all(movable[m["pod"]]["movable"] for m in plan["moves"])


def test_default_table_groups_the_pods_that_stay_and_wide_lists_each(tmp_path):
    items = fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")]
    items += [pod(f"pinned-{i}", "gpu-0", 0, annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
              for i in range(5)]
    items += [pod(f"bare-{i}", f"gpu-{i}", 0, kind=None) for i in range(3)]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    table = run("--snapshot", str(path), "--for", "ml/big")
    assert table.returncode == 0, table.stderr
    assert "None" not in table.stdout and "GPU-hours of work lost" in table.stdout
    assert "pinned-3" not in table.stdout  # grouped, not one row per pod
    headline = table.stdout.splitlines()[0]
    assert headline.rsplit(" GPU-hours", 1)[0].rsplit(" ", 1)[1].count(".") == 1
    assert len(headline.rsplit(" GPU-hours", 1)[0].rsplit(".", 1)[1]) == 2  # two decimals
    wide = run("--snapshot", str(path), "--for", "ml/big", "-o", "wide")
    assert all(f"ml/pinned-{i}" in wide.stdout for i in range(5)) and "ml/bare-0" in wide.stdout


def test_namespace_flag_limits_which_pods_may_move_and_are_shown(tmp_path):
    items = [gpu_node("g0", 8), gpu_node("g1", 8)]
    items += [pod(f"a-{i}", "g0", 1, ns="team-a", controller="a") for i in range(7)]
    items += [pod(f"b-{i}", "g1", 1, ns="team-b", controller="b") for i in range(7)]
    items += [pod("big", None, 2, ns="team-a", kind="Job", controller="big")]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    everyone = json.loads(run("--snapshot", str(path), "--for", "team-a/big", "-o", "json").stdout)
    assert everyone["feasible"]
    only_b = run("--snapshot", str(path), "--for", "team-a/big", "-n", "team-b", "-o", "json")
    plan = json.loads(only_b.stdout)
    assert all(m["pod"].startswith("team-b/") for m in plan["moves"])
    assert plan["pods"] and all(p["pod"].startswith("team-b/") for p in plan["pods"])
    only_a = json.loads(run("--snapshot", str(path), "--for", "big", "-n", "team-a", "-o", "json").stdout)
    assert all(m["pod"].startswith("team-a/") for m in only_a["moves"])
