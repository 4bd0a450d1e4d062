"""-n/--namespace and -A on every command that reads pods, as kubectl does (issue 11)."""

import json

import pytest

from inprocess import run_inprocess as run  # JSON and notes are the subject here, not the process


def _json(*args):
    r = run(*args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_audit_namespace_keeps_its_own_and_cluster_scoped_findings():
    every, _ = _json("audit", "--demo")
    mine, err = _json("audit", "--demo", "-n", "ml-research")
    assert err == ""
    assert 0 < len(mine["findings"]) < len(every["findings"])
    assert mine["namespace"] == "ml-research" and every["namespace"] is None
    for f in mine["findings"]:
        parts = f["object"].split("/")
        if f["scope"] == "namespace":
            assert parts[1] == "ml-research", f
        else:
            assert len(parts) == 2, f          # Kind/name: cluster-scoped
    assert any(f["scope"] == "cluster" for f in mine["findings"])
    # every finding of the namespace that the full audit has is kept
    expected = {(f["id"], f["object"]) for f in every["findings"]
                if f["object"].split("/")[1:2] == ["ml-research"] or f["scope"] == "cluster"}
    assert {(f["id"], f["object"]) for f in mine["findings"]} == expected


def test_all_namespaces_is_the_default():
    every, _ = _json("audit", "--demo")
    all_ns, _ = _json("audit", "--demo", "-A")
    assert every["findings"] == all_ns["findings"]


def test_status_namespace_counts_only_its_pods():
    data, _ = _json("status", "--demo", "-n", "inference")
    assert data["namespace"] == "inference"
    assert len(data["nodes"]) == 40                                  # nodes are cluster-scoped
    pods = [p for n in data["nodes"] for p in n["gpu_pods"]]
    assert pods and all(p.startswith("inference/") for p in pods)
    assert data["totals"]["gpus"]["allocated"] == 70                  # capacity is the whole cluster's
    assert sum(n["namespace_gpus"] for n in data["nodes"]) < 70


def test_frag_namespace_measures_its_own_demand():
    every, _ = _json("frag", "--demo")
    infer, _ = _json("frag", "--demo", "-n", "inference")
    assert infer["demand"]["namespace"] == "inference"
    assert infer["gpus"] == every["gpus"]
    # inference asks mostly 1-GPU pods: less of the free capacity is stranded for it
    assert infer["stranded_for_demand"]["gpus"] < every["stranded_for_demand"]["gpus"]


def test_doctor_namespace_narrows_pending_and_audit():
    data, _ = _json("doctor", "--demo", "-n", "ml-research")
    assert data["namespace"] == "ml-research"
    assert data["sections"]["pending"] and all(p["pod"].startswith("ml-research/")
                                               for p in data["sections"]["pending"])
    assert data["pending_phase"]["waiting_for_node"] == len(data["sections"]["pending"])
    assert all(f["scope"] == "cluster" or f["object"].split("/")[1] == "ml-research"
               for f in data["sections"]["audit"]["findings"])


@pytest.mark.parametrize("command", ["status", "frag", "audit", "doctor"])
def test_unknown_namespace_is_a_one_line_note(command):
    r = run(command, "--demo", "-n", "no-such-team")
    assert r.returncode in (0, 1), r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-team" in lines[0] and "not found" in lines[0]


def test_audit_unknown_namespace_keeps_only_cluster_scoped_findings():
    data, err = _json("audit", "--demo", "-n", "no-such-team")
    assert "not found" in err
    assert data["findings"] and all(f["scope"] == "cluster" for f in data["findings"])
