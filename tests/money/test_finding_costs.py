"""Audit findings priced: the autoscaler's flap cycle (pitfall 3), in the audit's `costs` and the doctor's money."""

import json

import pytest

from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import load_cluster
from kubegpu.sources.snapshot import read_snapshot
from tests.face.support import run


def _with_ca_flags(objs, *flags):
    for o in objs:
        if o.get("kind") == "Deployment" and o["metadata"]["name"] == "cluster-autoscaler":
            ctr = o["spec"]["template"]["spec"]["containers"][0]
            ctr["command"] = [a for a in ctr["command"] if not a.startswith("--scale-down-unneeded-time")] + list(flags)
    return objs


def _audit(tmp_path, objs, prices: str):
    dump, book = tmp_path / "dump.json", tmp_path / "prices.yaml"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    book.write_text(prices)
    r = run("audit", "--snapshot", str(dump), "--prices", str(book), "-o", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("unneeded, idle_s", [("20m", 1200), ("90s", 90), (None, 600)])
def test_a_flap_cycle_bills_boot_and_unneeded_time_once_per_autoscaler(tmp_path, unneeded, idle_s):
    flags = [f"--scale-down-unneeded-time={unneeded}"] if unneeded else []
    data = _audit(tmp_path, _with_ca_flags(demo_objects("pitfalls"), *flags),
                  "currency: EUR\nprices:\n  - gpuModel: NVIDIA-A100-SXM4-80GB\n    perGpuHour: 3\n"
                  "  - pool: inference\n    perGpuHour: 3\n")
    flaps = [c for c in data["costs"] if c["id"] in ("KG-301", "KG-302")]
    assert len(flaps) == 1                          # KG-301 and KG-302 name one autoscaler: one cycle
    c = flaps[0]
    assert c["object"] == "Deployment/kube-system/cluster-autoscaler"
    gpu_hours = (300 + idle_s) / 3600 * 8           # boot (assumed 5m) + unneeded-time, 8-GPU nodes
    assert c["gpu_hours"] == pytest.approx(gpu_hours, abs=0.01)
    assert c["cost"] == {"amount": pytest.approx(gpu_hours * 3, abs=0.01), "currency": "EUR", "per": "once",
                         "source": c["cost"]["source"]}
    assert "5m boot" in c["assumed"] and f"--scale-down-unneeded-time={unneeded or '10m'}" in c["assumed"]


def test_no_flap_cost_without_a_flapping_finding(tmp_path):
    objs = _with_ca_flags(demo_objects("pitfalls"), "--scale-down-unneeded-time=45m")
    for o in objs:
        if o.get("kind") == "Deployment" and o["metadata"]["name"] == "cluster-autoscaler":
            ctr = o["spec"]["template"]["spec"]["containers"][0]
            ctr["command"] = [a.replace("=10m", "=45m") for a in ctr["command"]]
    data = _audit(tmp_path, objs, "currency: EUR\nprices:\n  - pool: inference\n    perGpuHour: 3\n")
    assert not any(f["id"] in ("KG-301", "KG-302") for f in data["findings"])
    assert not any(c["id"] in ("KG-301", "KG-302") for c in data["costs"])


def test_doctor_ranks_the_priced_flap_fix_by_money_among_the_others():
    r = run("doctor", "--demo", "-o", "json")
    assert r.returncode in (0, 1), r.stderr
    money = json.loads(r.stdout)["sections"]["money"]
    flap = next(c for c in money["findings"] if c["id"] in ("KG-301", "KG-302"))
    fixes = money["fix_first"]
    auto = [f for f in fixes if f["kind"] == "autoscaler"]
    assert len(auto) == 1 and flap["object"] in auto[0]["summary"]
    assert auto[0]["saves_gpu_hours_per_day"] == pytest.approx(flap["gpu_hours"], abs=0.01)
    assert auto[0]["saves_per_day"]["amount"] == pytest.approx(flap["cost"]["amount"], abs=0.01)
    saved = [f["saves_per_day"]["amount"] for f in fixes]
    assert saved == sorted(saved, reverse=True) and len(fixes) >= 2


def test_slow_storage_prices_the_gpus_held_idle_per_gb_loaded(tmp_path):
    """KG-805: every bound replica's GPUs wait 1e9 / 200 MB/s (NFS, `kubegpu storage estimate`'s default) per GB."""
    objs = demo_objects("pitfalls")
    data = _audit(tmp_path, objs, "currency: EUR\nprices:\n  - pool: inference\n    perGpuHour: 3.6\n"
                                  "  - gpuModel: NVIDIA-A100-SXM4-80GB\n    perGpuHour: 3.6\n")
    state = load_cluster(read_snapshot(str(tmp_path / "dump.json")))   # the CLI's reading of the dump
    pods = [p for p in state.pods if p.namespace == "inference" and p.is_bound and not p.is_terminal
            and state.top_controller(p) == ("Deployment", "chat-llama")]
    gpus = sum(state.gpu_demand(p).total_milli for p in pods) / 1000
    assert gpus > 0
    c = next(c for c in data["costs"] if c["id"] == "KG-805")
    assert c["object"] == "Deployment/inference/chat-llama"
    assert c["gpu_hours"] == pytest.approx(gpus * 5 / 3600, abs=1e-4)
    assert c["cost"]["amount"] == pytest.approx(gpus * 5 / 3600 * 3.6, abs=1e-3) and c["cost"]["currency"] == "EUR"
    assert "1 GB of weights" in c["assumed"] and "200 MB/s" in c["assumed"]


def test_the_audit_table_states_each_priced_findings_assumption():
    text = run("audit", "--demo").stdout
    flap = next(line for line in text.splitlines() if "per flap cycle" in line)
    assert "assumed:" in flap and "--scale-down-unneeded-time=" in flap and "CNY" in flap
    load = next(line for line in text.splitlines() if "per GB of weights" in line)
    assert "assumed: 1 GB of weights" in load and "0.0 GPU-hours" not in load
