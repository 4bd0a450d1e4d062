"""`kubegpu rebalance` end to end on the demo: the round it would run, budgets, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "rebalance", *args], capture_output=True,
                          text=True, timeout=180)


def test_demo_round_makes_room_for_the_4_gpu_pod_and_the_2_pod_gang():
    r = run("--demo", "--once", "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["mode"] == "dry-run" and data["status"] == "dry-run"
    plans = {p["target"]: p for p in data["plans"]}
    assert set(plans) == {"ml-training/sft-mixtral-8xptd", "ml-training/ppo-actor"}
    for p in plans.values():
        assert p["status"] == "planned" and p["moves"]
        # every destination held first, by a placeholder with the moved pod's requests
        assert [(r["pod"], r["node"]) for r in p["reservations"]] == [(m["pod"], m["to"]) for m in p["moves"]]
        assert all(r["requests"]["nvidia.com/gpu"] == "1" and r["namespace"] == "kubegpu" for r in p["reservations"])
        assert abs(p["gpu_hours_lost"] - sum(m["gpu_hours"] for m in p["moves"])) < 0.01
    assert len(plans["ml-training/ppo-actor"]["lands_on"]) == 2      # both members of the gang placed
    # the round that serves both with the fewest moves: the 4-GPU pod first (3 moves), then the gang (2)
    assert [p["target"] for p in data["plans"]] == ["ml-training/sft-mixtral-8xptd", "ml-training/ppo-actor"]
    assert sum(len(p["moves"]) for p in data["plans"]) == 5
    assert data["fits_by_size"]["before"]["1"] == 10
    waiting = {c["target"]: c["outcome"] for c in data["candidates"]}
    assert waiting["ml-research/alice-notebook-0"] == "no-plan"
    assert "inference/summarizer-70b-prkmjl99ks-pv4zp" not in waiting   # pending 3 min < --min-pending-age


def test_demo_table_and_budgets():
    r = run("--demo", "--once", "--max-moves", "2")
    assert r.returncode == 0, r.stderr
    assert "plan 1: make room for ml-training/ppo-actor" in r.stdout
    assert "held back ml-training/sft-mixtral-8xptd" in r.stdout and "--max-moves 2" in r.stdout
    assert "TO (HELD FIRST)" in r.stdout
    r = run("--demo", "--once", "--quiet-hours", "11:00-13:00", "-o", "json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["status"] == "blocked" and data["skipped"] == "quiet hours 11:00-13:00 UTC" and not data["plans"]
    r = run("--demo", "--once", "--min-pending-age", "2h", "-o", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "nothing-to-do"


def test_bad_flags_are_one_line_exit_2():
    for args in (["--quiet-hours", "25:00-01:00"], ["--ttl", "5 minutes"], ["--max-moves", "-1"]):
        r = run("--demo", "--once", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and not r.stdout, (args, r.stderr)
    r = run("--kubeconfig", "/nonexistent/kubeconfig")   # a live loop needs --yes before anything is read
    assert r.returncode == 2 and "--yes" in r.stderr


def test_stranded_gpus_above_the_threshold_make_a_round_for_the_largest_demand_size():
    r = run("--demo", "--once", "--min-pending-age", "24h", "--stranded-above", "1", "--sustained", "0s", "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    (plan,) = data["plans"]
    assert plan["target"] == "size:4" and plan["trigger"] == "stranded" and plan["moves"]
    assert data["stranded"]["after"] < data["stranded"]["before"] == 5.37
    r = run("--demo", "--once", "--min-pending-age", "24h", "--stranded-above", "6", "--sustained", "0s", "-o", "json")
    assert json.loads(r.stdout)["status"] == "nothing-to-do"      # 5.37 stranded is not above 6


def test_max_moves_per_node_reaches_the_budget_koordinator_default_2():
    r = run("--demo", "--once", "-o", "json")
    assert json.loads(r.stdout)["budget"]["per_node"] == 2
    r = run("--demo", "--once", "-o", "json", "--max-moves-per-node", "1")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["budget"]["per_node"] == 1
    r = run("--demo", "--once", "--max-moves-per-node", "0")
    assert r.returncode == 2 and "--max-moves-per-node" in r.stderr and "Traceback" not in r.stderr
