"""Honest numbers: the frag headline moves the way an operator expects; one format per quantity."""

import json
import re

from .support import run


def _frag(*args):
    r = run("frag", *args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_headline_is_better_on_clean_demo_and_after_the_defrag_plan(tmp_path):
    after_file = tmp_path / "after.json"
    r = run("defrag", "--demo", "--size", "4", "--write-after", str(after_file))
    assert r.returncode == 0, r.stderr
    demo, clean, after = _frag("--demo"), _frag("--demo", "clean"), _frag("--snapshot", str(after_file))
    assert after["fits_by_size"]["4"] > demo["fits_by_size"]["4"]
    s = {name: d["stranded_for_demand"] for name, d in (("demo", demo), ("clean", clean), ("after", after))}
    assert s["clean"]["gpus"] < s["after"]["gpus"] < s["demo"]["gpus"]
    assert s["clean"]["largest_fit"] == 8 and s["after"]["largest_fit"] >= 4 and s["demo"]["largest_fit"] == 1


def test_headline_leads_the_table_and_names_its_demand():
    r = run("frag", "--demo")
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    summary = lines.index(next(line for line in lines if line.startswith("80 GPUs")))
    assert lines[summary + 1].startswith("stranded for demand")
    assert "this cluster's GPU pods" in lines[summary + 1] and "1-GPU" in lines[summary + 1]
    assert "FGD" in lines[-1]          # the FGD measure is kept, last


def test_gpu_counts_are_integers_in_json():
    d = _frag("--demo")
    assert d["gpus"] == {"total": 80, "allocated": 70, "free": 10}
    assert all(isinstance(v, int) for v in d["stranded_by_size"].values())
    assert '"allocated": 70.0' not in run("frag", "--demo", "-o", "json").stdout


def test_doctor_text_has_integer_gpus_plurals_and_phase_counts():
    r = run("doctor", "--demo")
    assert r.returncode == 0, r.stderr
    assert not re.search(r"\b\d+\.0\b(?!%)", r.stdout.split("Pending GPU pods")[0])   # no "10.0" GPU counts
    assert "1 GPUs" not in r.stdout and "None" not in r.stdout
    assert "kubectl's phase=Pending: 10 = 6 waiting for a node + 4 bound to a node, not started" in r.stdout
    assert "GPU-h lost" not in r.stdout and "GPU-hours lost)" in r.stdout


def test_gpu_map_title_and_table_agree_on_stranded(tmp_path):
    png = tmp_path / "map.png"
    r = run("frag", "--demo", "--plot", str(png))
    assert r.returncode == 0 and png.stat().st_size > 10_000
    from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_mix
    from kubegpu.fragmentation.gpumap import gpu_map
    from kubegpu.sources.demo import demo_objects
    from kubegpu.sources.documents import Documents, load_cluster

    docs = Documents(source="demo:pitfalls")
    for obj in demo_objects("pitfalls"):
        docs.add(obj, "demo")
    state = load_cluster(docs)
    report = cluster_frag_report(state)
    gmap = gpu_map(state, report, cluster_mix(state))
    assert gmap.stranded_gpus == report.stranded_by_size[str(gmap.reference_size)]
