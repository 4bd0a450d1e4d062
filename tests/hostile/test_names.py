"""Names an API server would refuse, in a dump: the pod is still explained (with a note), never looked up
again by the name the report printed (issue 23: `why --all` and `doctor` exited 2 "no pod or gang named")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from inprocess import run_inprocess

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"u-{name}"},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, gpus, node_name=None, ns="ml"):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "uid": f"u-{ns}-{name}",
                      "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": f"j-{name}",
                                           "controller": True}]},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                             "limits": {"nvidia.com/gpu": str(gpus)}}}]},
         "status": {"phase": "Running" if node_name else "Pending"}}
    if node_name:
        p["spec"]["nodeName"] = node_name
    return p


# a pending 8-GPU pod fits nowhere, and moving one 4-GPU pod makes room: the move planner runs for it
BAD_PODS = ["p/q[0]", "a/b/c", "x[1]", "Upper", "dot.", "-lead", "z" * 300, "sp ace", "ünï"]


def dump(tmp_path, pending_name, *, ns="ml", node_names=("gpu/1", "gpu[2]")):
    n1, n2 = node_names
    items = [node(n1), node(n2), pod("run/a", 4, n1), pod("run[b]", 4, n2), pod(pending_name, 8, ns=ns),
             pod("plain", 8)]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def valid(name, data):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(data))
    assert not errors, errors[0].message


@pytest.mark.parametrize("name", BAD_PODS)
def test_why_all_reports_a_pod_whose_name_an_api_server_refuses(tmp_path, name):
    path = dump(tmp_path, name)
    r = run_inprocess("why", "--all", "-o", "json", "--snapshot", path)
    assert r.code == 0, r.stderr
    reports = {x["pod"]: x for x in json.loads(r.stdout)}
    assert set(reports) == {f"ml/{name}", "ml/plain"}
    bad = reports[f"ml/{name}"]
    says = "no more than 253 characters" if len(name) > 253 else "RFC 1123 subdomain"  # upstream's words
    assert any(n.startswith("invalid pod name") and says in n for n in bad["notes"]), bad["notes"]
    assert reports["ml/plain"]["notes"] == []
    assert any(m["kind"] == "move-pods" for m in bad["remedies"])  # planned for the pod itself
    valid("why", list(reports.values()))
    table = run_inprocess("why", "--all", "--snapshot", path)
    assert table.code == 0 and "invalid pod name" in table.stdout, table.stderr


@pytest.mark.parametrize("name", ["p/q[0]", "Upper"])
def test_doctor_explains_it_and_defrag_plans_for_the_key_why_printed(tmp_path, name):
    path = dump(tmp_path, name)
    r = run_inprocess("doctor", "-o", "json", "--snapshot", path)
    assert r.code in (0, 1), r.stderr
    data = json.loads(r.stdout)
    assert {p["pod"] for p in data["sections"]["pending"]} == {f"ml/{name}", "ml/plain"}
    plan = run_inprocess("defrag", "--for", f"ml/{name}", "-o", "json", "--snapshot", path)
    assert plan.code in (0, 1), plan.stderr
    assert json.loads(plan.stdout)["moves"]


@pytest.mark.parametrize("name", ["p", "p/q"])
def test_a_namespace_with_a_slash_is_reported_and_narrowed_by_its_own_field(tmp_path, name):
    # "team/a/p/q" splits into no (namespace, name) that exists: only the pod itself can be planned for
    path = dump(tmp_path, name, ns="team/a")
    r = run_inprocess("why", "--all", "-o", "json", "--snapshot", path)
    assert r.code == 0, r.stderr
    bad = next(x for x in json.loads(r.stdout) if x["pod"] == f"team/a/{name}")
    assert any("namespace 'team/a'" in n for n in bad["notes"])
    assert any(m["kind"] == "move-pods" for m in bad["remedies"])
    doctor = run_inprocess("doctor", "-o", "json", "-n", "team/a", "--snapshot", path)
    assert doctor.code in (0, 1), doctor.stderr
    assert [p["pod"] for p in json.loads(doctor.stdout)["sections"]["pending"]] == [f"team/a/{name}"]


@pytest.mark.parametrize("node_names", [("gpu/1", "gpu[2]"), ("ml/plain", "N2")])
def test_node_names_an_api_server_refuses_are_data_too(tmp_path, node_names):
    path = dump(tmp_path, "ok", node_names=node_names)
    for args in (["why", "--all", "-o", "json"], ["doctor", "-o", "json"], ["frag", "-o", "json"],
                 ["status", "-o", "json"], ["audit", "-o", "json"]):
        r = run_inprocess(*args, "--snapshot", path)
        assert r.code in (0, 1), (args, r.stderr)
    why = json.loads(run_inprocess("why", "--all", "-o", "json", "--snapshot", path).stdout)
    moves = [m for rep in why for rem in rep["remedies"] if rem["kind"] == "move-pods" for m in rem["details"]["moves"]]
    assert moves and all(m["from"] in node_names and m["to"] in node_names for m in moves)
