"""`defrag --resume` given files that are not journals, and `kubegpu rules` given durations Prometheus refuses.

A file passed to --resume by mistake is refused in one line and never modified (it used to lose
its last line before anything checked it was a journal). Every duration `rules` writes is read
as Prometheus's model.ParseDuration reads it (prometheus/common model/time.go).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest
import yaml

from kubegpu.model.timeutil import prometheus_duration_ms

from inprocess import run_inprocess
from .conftest import run

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:9"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c"""  # no newline at the end, as many editors leave it


@pytest.mark.parametrize("content", [
    KUBECONFIG.encode(),
    b'{"event": "plan"}\n{"not": "a journal record"}',
    b'{"a": 1}',
    b"just one line of text",
    b"",
])
def test_resume_of_a_file_that_is_not_a_journal_refuses_and_leaves_it_alone(tmp_path, content):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    victim = tmp_path / "victim"
    victim.write_bytes(content)
    result = run_inprocess("defrag", "--resume", str(victim), "--kubeconfig", str(kubeconfig))
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert victim.read_bytes() == content


def test_resume_of_the_kubeconfig_itself_keeps_its_last_line(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    result = run_inprocess("defrag", "--resume", str(kubeconfig), "--kubeconfig", str(kubeconfig))
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert kubeconfig.read_text().endswith("current-context: c")


def test_resume_of_a_fifo_does_not_hang(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    fifo = tmp_path / "journal.jsonl"
    os.mkfifo(fifo)
    try:
        result = run("defrag", "--resume", str(fifo), "--kubeconfig", str(kubeconfig), timeout=60)
    except subprocess.TimeoutExpired:
        threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True).start()
        raise
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert "not a regular file" in result.stderr


# -- Prometheus durations ----------------------------------------------------------------------------

REFUSED = ["1.5h", "1us", "5m5m", "10m ", " 10m", "1m1h", "", "-5m", "10", "1h-5m", "1µs", "1ns", "1M", "٣m",
           "300y", "99999999999999999999s", "1d 2h", "10mm"]
ACCEPTED = {"10m": 600_000, "1h30m": 5_400_000, "1y": 365 * 86_400_000, "2w": 14 * 86_400_000,
            "1d2h": 93_600_000, "1s500ms": 1500, "0": 0, "0s": 0, "1y1w1d1h1m1s1ms": 32_230_861_001,
            "292y": 292 * 365 * 86_400_000}


@pytest.mark.parametrize("text", REFUSED)
def test_durations_prometheus_refuses_are_refused(text):
    with pytest.raises(ValueError):
        prometheus_duration_ms(text)


@pytest.mark.parametrize("text, ms", sorted(ACCEPTED.items()))
def test_durations_prometheus_accepts_read_as_it_reads_them(text, ms):
    assert prometheus_duration_ms(text) == ms


@pytest.mark.parametrize("flag", ["--for", "--idle-for"])
@pytest.mark.parametrize("text", ["1.5h", "1us", "5m5m", "10m "])
def test_rules_refuses_durations_prometheus_refuses(flag, text):
    result = run_inprocess("rules", flag, text)
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert result.stdout == ""
    assert "Prometheus duration" in result.stderr


PROMTOOL = shutil.which("promtool")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
@pytest.mark.parametrize("text", REFUSED[:12] + sorted(ACCEPTED))
def test_our_verdict_is_promtools(tmp_path, text):
    """promtool check rules on a rule file with this `for:` agrees with prometheus_duration_ms."""
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
        {"alert": "A", "expr": "vector(1) > 0", "for": text}]}]}))
    proc = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    try:
        prometheus_duration_ms(text)
        ours = True
    except ValueError:
        ours = False
    assert ours == (proc.returncode == 0), proc.stdout + proc.stderr
