"""`why --all` writes each set of nodes once: every name can be recovered, and equals the old full lists."""

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from sched_builders import cluster, node, pod

from kubegpu.explain import explain_all
from kubegpu.explain.nodesets import NodeSets, resolve_node_sets

ROOT = Path(__file__).resolve().parents[2]
TOL = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
NODES = 30


def anti_affinity(app):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}}


def docs(pending=10):
    """30 nodes with room; node i runs a pod of app svc-(i // 3); pending pod k keeps away from svc-k,
    so each pending pod is shut out of 3 nodes of its own (sets close to, but not the same as, the last),
    and 8-GPU replicas that fit nowhere (one set shared by all of them)."""
    items = [node(f"gpu-{i:02d}", gpus=8, labels={"kubernetes.io/hostname": f"gpu-{i:02d}"}) for i in range(NODES)]
    items += [pod(f"svc-{i}", node_name=f"gpu-{i:02d}", gpus=2, labels={"app": f"svc-{i // 3}"}, tolerations=TOL)
              for i in range(NODES)]
    items += [pod(f"spread-{k}", gpus=1, tolerations=TOL, labels={"app": f"p-{k}"},
                  affinity=anti_affinity(f"svc-{k}")) for k in range(pending)]
    items += [pod(f"big-{k}", ns="ml", gpus=8, tolerations=TOL, cpu=f"{k + 1}") for k in range(4)]
    return items


def plain(reports):
    return [msgspec.to_builtins(r) for r in reports]


def test_every_name_is_recovered_and_equals_the_full_lists():
    state = cluster(*docs())
    full = plain(explain_all(state, shared_node_sets=False))
    shared = plain(explain_all(state))
    forms = {"full": 0, "by id": 0, "as a change": 0}
    for g in (g for r in shared for g in r["node_groups"]):
        forms["full" if g["nodes"] is not None else "as a change" if "node_set_base" in g else "by id"] += 1
    assert all(forms.values()), forms  # the cluster exercises every form
    first_seen = [g["node_set"] for r in shared for g in r["node_groups"]
                  if g["nodes"] is not None or "node_set_base" in g]
    assert first_seen == list(range(len(first_seen)))  # numbered in the order the output shows them
    resolved = list(resolve_node_sets(shared))
    assert [r["pod"] for r in resolved] == [r["pod"] for r in full]
    for mine, old in zip(resolved, full):
        assert [(g["count"], sorted(g["nodes"])) for g in mine["node_groups"]] == \
            [(g["count"], sorted(g["nodes"])) for g in old["node_groups"]]
        assert all(g["count"] == len(g["nodes"]) for g in mine["node_groups"])


def test_names_written_grow_with_pods_plus_nodes_not_their_product():
    def names_written(pending):
        groups = [g for r in plain(explain_all(cluster(*docs(pending)))) for g in r["node_groups"]]
        return sum(len(g.get("nodes") or []) + len(g.get("nodes_added", [])) + len(g.get("nodes_removed", []))
                   for g in groups)
    # each more pending pod costs 9 names whatever the cluster's size: its 3 nodes (the group its
    # anti-affinity shuts out), and the nodes that fit as a change of the first such set (3 in, 3 out)
    assert names_written(10) <= 2 * NODES + 9 * 10
    assert names_written(10) - names_written(5) <= 9 * 5


def test_why_all_json_with_node_sets_matches_the_schema(tmp_path):
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs()}))
    res = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "why", "--all", "-o", "json", "--snapshot",
                          str(path)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    schema = json.loads((ROOT / "docs" / "schemas" / "why.schema.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(data))
    assert not errors, errors[0].message
    broken = json.loads(res.stdout)
    del next(g for r in broken for g in r["node_groups"] if g["nodes"] is None)["node_set"]
    assert list(Draft202012Validator(schema).iter_errors(broken))  # a null list must say which set it is


def _written(sets, members_list, verdicts):
    """The groups as `why --all` writes them, in order (one group per 'report')."""
    out = []
    for members, verdict in zip(members_list, verdicts):
        ref = sets.encode(members, verdict)
        group = {"count": len(members), "nodes": ref.nodes, "node_set": ref.node_set}
        if ref.base is not None:
            group |= {"node_set_base": ref.base, "nodes_added": ref.added, "nodes_removed": ref.removed}
        out.append({"pod": f"p/{len(out)}", "node_groups": [group]})
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.sets(st.integers(0, n - 1)), st.sampled_from([(False, "A", ("x",)), (False, "B", ()),
                                                                         (True, None, ())])),
             min_size=1, max_size=25))))
def test_any_sequence_of_sets_is_written_and_read_back(case):
    import numpy as np

    n, groups = case
    names = [f"node-{i}" for i in range(n)]
    members_list = [np.array(sorted(m), dtype=np.int64) for m, _ in groups]
    written = _written(NodeSets(names), members_list, [v for _, v in groups])
    ids: dict[frozenset, int] = {}
    for report, members in zip(resolve_node_sets(json.loads(json.dumps(written))), members_list):
        g = report["node_groups"][0]
        assert sorted(g["nodes"]) == sorted(names[i] for i in members)
        assert ids.setdefault(frozenset(members.tolist()), g["node_set"]) == g["node_set"]  # one set, one id
    assert len(set(ids.values())) == len(ids)  # different sets, different ids


@pytest.mark.parametrize("with_nodes", [False, True])
def test_nodes_flag_still_lists_every_node_of_every_report(with_nodes):
    state = cluster(*docs(3))
    reports = explain_all(state, with_nodes=with_nodes)
    if with_nodes:
        assert all([n.name for n in r.nodes] == [n.name for n in state.nodes] for r in reports)
    else:
        assert all(r.nodes is None for r in reports)
