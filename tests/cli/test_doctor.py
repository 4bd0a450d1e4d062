"""`kubegpu doctor`: the one-command overview (every section, every output, exit codes)."""

import json
import re
import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          timeout=300)


def test_demo_report_has_every_section():
    r = run("doctor", "--demo", "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    s = data["sections"]
    assert list(s) == ["status", "fragmentation", "pending", "defrag", "audit", "money"]
    assert s["status"]["totals"]["gpus"] == {"total": 80, "allocated": 70, "free": 10}
    assert s["fragmentation"]["fits_by_size"] == {"1": 10, "2": 0, "4": 0, "8": 0}
    assert len({p["pod"] for p in s["pending"]}) == 6 and all(p["first_remedy"] for p in s["pending"])
    assert s["defrag"]["applied"] is False and s["defrag"]["feasible"] and s["defrag"]["moves"]
    assert {f["pitfall"] for f in s["audit"]["findings"] if f["severity"] in ("warn", "error")} == set(range(1, 11))


def test_table_names_each_part_and_marks_the_plan_not_applied():
    r = run("doctor", "--demo")
    assert r.returncode == 0, r.stderr
    for heading in ("Status", "Fragmentation", "Pending GPU pods", "Defrag preview (not applied)", "Audit"):
        assert heading in r.stdout


def test_fail_on_sets_the_exit_code():
    assert run("doctor", "--demo", "--fail-on", "error", "--section", "audit").returncode == 1
    assert run("doctor", "--demo", "clean", "--fail-on", "warn", "--section", "audit").returncode == 0


def test_html_is_self_contained_and_written_atomically(tmp_path):
    out = tmp_path / "report.html"
    r = run("doctor", "--demo", "-o", "html", "--file", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "data:image/png;base64," in page
    assert not re.search(r"(src|href)=[\"']https?://", page)  # no external assets
    assert "not applied" in page
    bad = run("doctor", "--demo", "-o", "html", "--file", str(tmp_path / "missing-dir" / "r.html"))
    assert bad.returncode == 2 and not (tmp_path / "missing-dir").exists()


def test_models_section_when_the_snapshot_has_a_model_cache(tmp_path):
    """deploy/models' example ModelCache on the demo: doctor adds `models` (JSON, schema, table); without one, no section."""
    from pathlib import Path

    import yaml
    from jsonschema import Draft202012Validator

    from kubegpu.sources.demo import demo_objects

    root = Path(__file__).resolve().parents[2]
    cache = yaml.safe_load((root / "deploy" / "models" / "modelcache-example.yaml").read_text())
    objs = demo_objects()
    a100 = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Node"
                  and o["metadata"].get("labels", {}).get("nvidia.com/gpu.product") == cache["spec"]["nodeSelector"][
                      "nvidia.com/gpu.product"])
    version = cache["spec"]["version"]
    cache["status"] = {"nodes": {a100[0]: {"state": "Verified", "version": version, "current": version}}}
    snap = tmp_path / "with-cache.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*objs, cache]}))
    r = run("doctor", "--snapshot", str(snap), "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    models = data["sections"]["models"]
    assert list(data["sections"])[-2:] == ["models", "money"]   # money prices what the others found, last
    assert models["summary"] == {"caches": 1, "ready": 0, "invalid": 0}    # readiness asks 3 copies, 1 is verified
    row = models["caches"][0]
    assert row["model"] == "llama-3-8b" and row["version"] == version
    assert row["nodes"]["Verified"] == 1 and sum(row["nodes"].values()) == len(a100) == 10
    schema = json.loads((root / "docs" / "schemas" / "doctor.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(data))
    table = run("doctor", "--snapshot", str(snap), "--section", "models")
    assert table.returncode == 0, table.stderr
    assert "Model caches" in table.stdout and "llama-3-8b" in table.stdout and "1 Verified" in table.stdout
    html = tmp_path / "r.html"
    assert run("doctor", "--snapshot", str(snap), "-o", "html", "--file", str(html)).returncode == 0
    assert "<h2>Model caches</h2>" in html.read_text() and "llama-3-8b" in html.read_text()
    assert "models" not in json.loads(run("doctor", "--demo", "-o", "json", "--section", "models").stdout)["sections"]



def test_the_collector_is_back_on_after_the_report():
    # doctor builds its report with the cyclic GC paused (a one-shot command); it must not stay off
    import gc

    from click.testing import CliRunner

    from kubegpu.cli.main import cli

    assert gc.isenabled()
    try:
        r = CliRunner().invoke(cli, ["doctor", "--demo", "-o", "json", "--section", "status"], catch_exceptions=False)
    finally:
        enabled = gc.isenabled()
        gc.enable()
    assert enabled and r.exit_code == 0
    assert json.loads(r.output)["sections"]["status"]["totals"]["nodes"] == 40
