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
    assert list(s) == ["status", "fragmentation", "pending", "defrag", "audit"]
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
