"""PDB budgets as the API server enforces them, used up across a plan."""

from builders import cluster, gpu_node, pdb, pod

from kubegpu.defrag.budget import BudgetLedger


def _state(*objs):
    return cluster([gpu_node("n1"), *objs])


def test_published_status_is_used_and_used_up_across_the_plan():
    pods = [pod(f"w{i}", "n1", controller="web") for i in range(4)]
    st = _state(*pods, pdb("web", {"app": "web"}, max_unavailable=1,
                           status={"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2,
                                   "expectedPods": 4}))
    ledger = BudgetLedger(st)
    p = {x.name: x for x in st.pods}
    assert ledger.blocked([p["w0"]]) is None
    ledger.take([p["w0"]])
    ledger.take([p["w1"]])
    assert "already used by earlier moves" in ledger.blocked([p["w2"]])


def test_budget_is_computed_when_the_status_is_missing():
    pods = [pod(f"w{i}", "n1", controller="web") for i in range(3)]
    ledger = BudgetLedger(_state(*pods, pdb("web", {"app": "web"}, min_available="50%")))
    # 3 pods, 50% rounds up to 2 desired: one disruption allowed
    assert ledger.remaining() == {"ml/web": 1}


def test_an_exhausted_budget_blocks_and_says_so():
    pods = [pod(f"w{i}", "n1", controller="web") for i in range(2)]
    st = _state(*pods, pdb("web", {"app": "web"}, min_available=2))
    ledger = BudgetLedger(st)
    assert ledger.blocked([st.pods[0]]) == ("PodDisruptionBudget ml/web allows no more disruptions "
                                            "(2 healthy, needs 2)")
    assert ledger.exhausted(st.pods[0])


def test_unready_pods_follow_the_unhealthy_pod_eviction_policy():
    pods = [pod("ok", "n1", controller="web"), pod("sick", "n1", controller="web", ready=False)]
    always = _state(*pods, {**pdb("web", {"app": "web"}, min_available=1),
                            "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 1,
                                     "unhealthyPodEvictionPolicy": "AlwaysAllow"}})
    sick = always.pod("ml", "sick")
    assert BudgetLedger(always).blocked([sick]) is None
    # IfHealthyBudget (default): healthy 1 >= desired 1 > 0, so the unready pod may go too
    default = _state(*pods, pdb("web", {"app": "web"}, min_available=1))
    assert BudgetLedger(default).blocked([default.pod("ml", "sick")]) is None
    tight = _state(*pods, pdb("web", {"app": "web"}, min_available=2))
    assert BudgetLedger(tight).blocked([tight.pod("ml", "sick")]) is not None
