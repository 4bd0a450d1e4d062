"""Money on the real CLI: every figure traceable to a price and its source; GPU-hours only without one."""

import json
from datetime import datetime

import pytest

from kubegpu.sources.demo import demo_objects
from tests.face.support import run

DEMO_GPU_HOUR = 40 / 8          # the article's 8x A100 node at 40 CNY/h


def json_of(*args):
    r = run(*args, "-o", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def snapshot(tmp_path, objs, name="dump.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return str(path)


def demo_without_instance_types():
    objs = demo_objects("pitfalls")
    for o in objs:
        if o.get("kind") == "Node":
            for key in ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"):
                o["metadata"]["labels"].pop(key, None)
    return objs


def test_demo_frag_prices_stranded_gpus_at_the_article_figure():
    data = json_of("frag", "--demo")
    cost = data["cost"]
    s = cost["stranded"]
    assert s["stranded_gpus"] == data["stranded_for_demand"]["gpus"] > 0
    assert s["per_day"]["currency"] == "CNY" and s["per_day"]["per"] == "day"
    assert "article" in s["per_day"]["source"]
    assert s["per_day"]["amount"] == pytest.approx(sum(p["stranded_gpus"] for p in cost["pools"]) * DEMO_GPU_HOUR * 24,
                                                   abs=0.05)
    for pool, row in zip([p for p in data["pools"] if p["gpus"]["total"]], cost["pools"], strict=True):
        assert row["pool"] == pool["pool"] and row["stranded_gpus"] == pool["stranded_for_demand"]["gpus"]
        assert row["per_hour"]["amount"] == pytest.approx(row["stranded_gpus"] * DEMO_GPU_HOUR, abs=0.01)
    assert cost["prices"]["origin"] == "demo" and cost["prices"]["priced_gpu_nodes"] == 10


def test_a_snapshot_without_prices_uses_labelled_list_prices(tmp_path):
    data = json_of("frag", "--snapshot", snapshot(tmp_path, demo_objects("pitfalls")))
    s = data["cost"]["stranded"]
    assert data["cost"]["prices"]["origin"] == "list"
    assert s["per_hour"]["currency"] == "USD" and s["per_hour"]["source"].startswith("list price p4de.24xlarge")
    assert s["per_hour"]["amount"] == pytest.approx(s["stranded_gpus"] * 27.45 / 8, abs=0.01)


def test_no_price_at_all_shows_gpu_hours_only(tmp_path):
    path = snapshot(tmp_path, demo_without_instance_types())
    data = json_of("frag", "--snapshot", path)
    s = data["cost"]["stranded"]
    assert s["per_hour"] is None and s["per_day"] is None
    assert s["gpu_hours_per_day"] == pytest.approx(s["stranded_gpus"] * 24)
    assert data["cost"]["prices"]["priced_gpu_nodes"] == 0
    text = run("frag", "--snapshot", path).stdout
    assert "GPU-hours/day" in text and "CNY" not in text and "USD" not in text


def test_prices_file_per_pool(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nprices:\n  - pool: inference\n    perGpuHour: 1\n"
                      "  - gpuModel: NVIDIA-A100-SXM4-80GB\n    perHour: 80\n    source: contract 42\n")
    data = json_of("frag", "--demo", "--prices", str(prices))
    pools = {p["pool"]: p for p in data["cost"]["pools"]}
    inf, train = pools["inference"], pools["training"]
    assert inf["per_hour"]["amount"] == pytest.approx(inf["stranded_gpus"] * 1, abs=0.01)
    assert train["per_hour"]["amount"] == pytest.approx(train["stranded_gpus"] * 10, abs=0.01)
    assert train["per_hour"]["source"] == "contract 42"
    total = data["cost"]["stranded"]["per_hour"]
    assert total["currency"] == "EUR"
    assert total["amount"] == pytest.approx(inf["per_hour"]["amount"] + train["per_hour"]["amount"], abs=0.02)


def test_bad_prices_file_is_one_line_exit_2(tmp_path):
    prices = tmp_path / "p.yaml"
    prices.write_text("prices: [{pool: a, perHour: -3}]\n")
    r = run("frag", "--demo", "--prices", str(prices))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and str(prices) in r.stderr and "perHour" in r.stderr
    r = run("doctor", "--demo", "--prices", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "missing.yaml" in r.stderr and "Traceback" not in r.stderr


def test_doctor_tells_a_new_user_what_fragmentation_costs_and_what_the_first_fix_saves():
    text = run("doctor", "--demo").stdout
    assert "CNY/day" in text and "fix first" in text and "article" in text
    data = json_of("doctor", "--demo")
    m = data["sections"]["money"]
    fix = m["fix_first"][0]
    plan = data["sections"]["defrag"]
    freed = plan["stranded_before"] - plan["stranded_after"]
    assert fix["kind"] == "defrag" and freed > 0
    assert fix["saves_gpu_hours_per_day"] == pytest.approx(freed * 24, abs=0.01)
    assert fix["saves_per_day"]["amount"] == pytest.approx(freed * 24 * DEMO_GPU_HOUR, abs=0.05)
    assert fix["one_off"]["amount"] == pytest.approx(plan["cost_gpu_hours"] * DEMO_GPU_HOUR, abs=0.01)
    amounts = [f["saves_per_day"]["amount"] for f in m["fix_first"]]
    assert amounts == sorted(amounts, reverse=True)


def test_pending_wait_cost_runs_from_creation_to_the_capture():
    data = json_of("doctor", "--demo")
    captured = datetime.fromisoformat("2026-11-30T12:00:00+00:00")   # the demo's capturedAt
    waits = {w["pod"]: w for w in data["sections"]["money"]["pending"]}
    assert set(waits) == {p["pod"] for p in data["sections"]["pending"]}
    for w in waits.values():
        since = datetime.fromisoformat(w["since"].replace("Z", "+00:00"))
        assert w["waited_seconds"] == pytest.approx((captured - since).total_seconds())
        assert w["delay_gpu_hours"] == pytest.approx(w["gpus"] * w["waited_seconds"] / 3600, abs=0.001)
        assert w["delay_cost"]["amount"] == pytest.approx(w["delay_gpu_hours"] * DEMO_GPU_HOUR, rel=0.01, abs=0.01)


def test_defrag_plan_cost_against_what_it_frees():
    data = json_of("defrag", "--demo", "--size", "4")
    m = data["money"]
    freed = data["before"]["stranded_for_demand"]["gpus"] - data["after"]["stranded_for_demand"]["gpus"]
    assert m["one_off_gpu_hours"] == pytest.approx(data["total_cost_gpu_hours"])
    assert m["one_off"]["amount"] == pytest.approx(data["total_cost_gpu_hours"] * DEMO_GPU_HOUR, abs=0.01)
    assert m["saves_per_day"]["amount"] == pytest.approx(max(freed, 0) * 24 * DEMO_GPU_HOUR, abs=0.05)
    assert m["payback_hours"] == pytest.approx(data["total_cost_gpu_hours"] / freed, abs=0.01)
    assert "money: costs" in run("defrag", "--demo", "--size", "4").stdout


def test_why_prices_the_wait_and_each_remedy():
    reports = json_of("why", "--all", "--demo")
    captured = datetime.fromisoformat("2026-11-30T12:00:00+00:00")
    seen = set()
    for r in reports:
        m = r["money"]
        w = m["wait"]
        since = datetime.fromisoformat(w["since"].replace("Z", "+00:00"))
        assert w["waited_seconds"] == pytest.approx((captured - since).total_seconds())
        assert [c["kind"] for c in m["remedies"]] == [x["kind"] for x in r["remedies"]]
        for c, remedy in zip(m["remedies"], r["remedies"]):
            d = remedy.get("details", {})
            assert c["unblocks_gpus"] == w["gpus"]
            if remedy["kind"] == "move-pods":
                assert c["one_off"]["amount"] == pytest.approx(d["gpu_hours_lost"] * DEMO_GPU_HOUR, abs=0.01)
            elif remedy["kind"] == "preempt":
                lost = sum(v["gpu_hours_lost"] for v in d["victims"])
                assert c["one_off_gpu_hours"] == pytest.approx(lost, abs=0.001)
            elif remedy["kind"] == "scale-node-group":
                assert c["one_off"]["amount"] == d["add_nodes"] * 40 and c["one_off_gpu_hours"] == d["add_nodes"] * 8
            else:
                assert c["one_off"] is None
            seen.add(remedy["kind"])
    assert {"move-pods", "preempt", "scale-node-group"} <= seen
    text = run("why", "sft-mixtral-8xptd", "-n", "ml-training", "--demo").stdout
    assert "GPU-hours of work delayed" in text and "one-off" in text and "CNY" in text


def test_audit_prices_work_at_risk_without_checkpoints(tmp_path):
    from tests.sharing.cluster import three_node_pool

    prices = tmp_path / "prices.yaml"
    prices.write_text("prices: [{gpuModel: NVIDIA-A100-SXM4-40GB, perGpuHour: 2, currency: USD, source: test}]\n")
    data = json_of("audit", "--snapshot", snapshot(tmp_path, three_node_pool()), "--prices", str(prices))
    costs = {c["object"]: c for c in data["costs"]}
    flagged = {f["object"] for f in data["findings"] if f["id"] == "KG-403"}
    # priced: the flagged workloads with running pods (the pending wait-0/1 have done no work yet)
    assert set(costs) == {"Job/ml/train-a", "Job/ml/train-b"} and set(costs) <= flagged
    # 4 GPUs running since 10:00, captured at 12:00: 8 GPU-hours lost to a preemption now
    assert costs["Job/ml/train-a"]["gpu_hours"] == 8
    assert costs["Job/ml/train-a"]["cost"] == {"amount": 16.0, "currency": "USD", "per": "once", "source": "test"}


def test_doctor_html_carries_the_money(tmp_path):
    out = tmp_path / "report.html"
    r = run("doctor", "--demo", "-o", "html", "--file", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "<h2>Money</h2>" in page and "CNY/day" in page and "fix first" in page


def test_rebalance_plans_carry_defrags_pricing(tmp_path):
    """Each planned round's money is defrag's: work lost x price once, stranded GPUs freed x 24 h x price."""
    data = json_of("rebalance", "--demo", "--once")
    planned = [p for p in data["plans"] if p["status"] == "planned"]
    assert planned and data["prices"]["origin"] == "demo"
    for p in planned:
        m = p["money"]
        assert m["one_off_gpu_hours"] == pytest.approx(p["gpu_hours_lost"], abs=1e-3)
        assert m["one_off"] == {"amount": pytest.approx(p["gpu_hours_lost"] * DEMO_GPU_HOUR, abs=0.01),
                                "currency": "CNY", "per": "once", "source": m["one_off"]["source"]}
        assert "article" in m["one_off"]["source"]
        assert m["saves_per_day"]["amount"] == pytest.approx(m["saves_gpu_hours_per_day"] * DEMO_GPU_HOUR, abs=0.05)
        assert m["saves_gpu_hours_per_day"] > 0
    text = run("rebalance", "--demo", "--once").stdout
    assert text.count("money: costs") == len(planned) and "CNY" in text
    bare = json_of("rebalance", "--snapshot", snapshot(tmp_path, demo_without_instance_types()), "--once")
    for p in (p for p in bare["plans"] if p["status"] == "planned"):
        assert p["money"]["one_off"] is None and p["money"]["saves_per_day"] is None
        assert p["money"]["one_off_gpu_hours"] > 0
    assert bare["prices"]["priced_gpu_nodes"] == 0
