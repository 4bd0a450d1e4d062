"""`why` text speaks like a person: counted nouns, GPU-hours with two decimals (issue 11)."""

import re
import subprocess
import sys


def _why_all_text() -> str:
    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "why", "--all", "--demo"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_remedies_use_counted_nouns_and_two_decimal_gpu_hours():
    text = _why_all_text()
    # kube-scheduler's own words keep "node(s)"; our remedy lines are "  1. [kind] ..."
    remedies = "\n".join(line for line in text.splitlines() if re.match(r"\s+\d+\. \[", line))
    assert remedies
    # (the "never" verdict quotes kube-scheduler's reasons, which keep their "node(s)")
    assert not re.search(r"\bpods?\(s\)|fits on \d+ node\(s\)|\b1 GPUs\b|GPU\(s\)", remedies)
    text = remedies
    assert "ask for 1 GPU instead of 2" in text  # not "1 GPUs"
    assert re.search(r"fits on \d+ nodes now", text)
    for hours in re.findall(r"([0-9.]+) GPU-hours of work lost", text):
        assert re.fullmatch(r"\d+\.\d\d", hours), hours
