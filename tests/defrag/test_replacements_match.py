"""Matching evicted pods to their replacements (pure): siblings, same-name StatefulSets, terminating pods."""

from kubegpu.defrag.api import PodView
from kubegpu.defrag.plan import Move
from kubegpu.defrag.replacements import match_replacements


def view(name, uid, node="n2", phase="Running", terminating=False, owner="rs-1"):
    return PodView(namespace="ml", name=name, uid=uid, node=node, phase=phase, ready=phase == "Running",
                   terminating=terminating, owner_uid=owner, owner="ReplicaSet/web")


def move(name, uid, step=1):
    return Move(step=step, pod=f"ml/{name}", from_="n1", to="n2", uid=uid)


def test_a_sibling_that_already_ran_is_not_taken_for_a_replacement():
    req = {"u-a": {"siblings": ["u-a", "u-b"], "owner_uid": "rs-1"}}
    placed, lingering = match_replacements([move("a", "u-a")], req, {"ml": [view("b", "u-b")]})
    assert placed == {} and lingering == []
    placed, _ = match_replacements([move("a", "u-a")], req, {"ml": [view("b", "u-b"), view("c", "u-c", node="n3")]})
    assert placed == {"u-a": ("ml/c", "n3")}


def test_two_moves_of_one_controller_get_two_different_replacements():
    req = {u: {"siblings": ["u-a", "u-b"], "owner_uid": "rs-1"} for u in ("u-a", "u-b")}
    pods = [view("c", "u-c"), view("d", "u-d", node="n3")]
    placed, _ = match_replacements([move("a", "u-a"), move("b", "u-b")], req, {"ml": pods})
    assert sorted(placed.values()) == [("ml/c", "n2"), ("ml/d", "n3")]


def test_a_terminating_original_lingers_and_pending_or_terminating_pods_do_not_count():
    req = {"u-db0": {"siblings": ["u-db0", "u-db1"], "owner_uid": "sts-1"}}
    pods = [view("db-0", "u-db0", node="n1", terminating=True, owner="sts-1"),
            view("db-x", "u-x", node=None, phase="Pending", owner="sts-1")]
    placed, lingering = match_replacements([move("db-0", "u-db0")], req, {"ml": pods})
    assert placed == {} and lingering == ["ml/db-0"]
    # the StatefulSet recreates db-0 under its name, with a new uid
    placed, lingering = match_replacements([move("db-0", "u-db0")], req,
                                           {"ml": [view("db-0", "u-db0-new", owner="sts-1")]})
    assert placed == {"u-db0": ("ml/db-0", "n2")} and lingering == []
