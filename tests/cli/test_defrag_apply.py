"""`kubegpu defrag --apply / --resume` end to end: the real CLI (a subprocess) against the test API server."""

from __future__ import annotations

import json
import signal
import time
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "defrag"))
from apiserver.eviction import ClusterEmulator  # noqa: E402
from apiserver.server import FakeApiServer  # noqa: E402
from apiserver.wire import ObjectKey, status_reply  # noqa: E402
from builders import fragmented, pod  # noqa: E402


APPLY_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "defrag-apply.schema.json"


def valid_report(text: str) -> dict:
    """The --apply/--resume report, checked against docs/schemas/defrag-apply.schema.json."""
    report = json.loads(text)
    errors = list(Draft202012Validator(json.loads(APPLY_SCHEMA.read_text())).iter_errors(report))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return report


def namespace(name, uid):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid}}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "defrag", *args], capture_output=True,
                          text=True, timeout=120, env={**__import__("os").environ, "KUBEGPU_TIMEOUT": "5"})


def two_context_kubeconfig(path: Path, a: FakeApiServer, b: FakeApiServer) -> Path:
    conf = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
            "clusters": [{"name": n, "cluster": {"server": s.url}} for n, s in (("a", a), ("b", b))],
            "users": [{"name": "u", "user": {"token": "test-token"}}],
            "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in ("a", "b")]}
    path.write_text(json.dumps(conf))
    return path


@pytest.fixture
def clusters(tmp_path):
    """Two clusters with nodes of the same names; the kubeconfig's current context is `a`."""
    with FakeApiServer() as a, FakeApiServer() as b:
        emus = {}
        for server, uid in ((a, "uid-a"), (b, "uid-b")):
            emus[uid] = ClusterEmulator(server, lag=0)
            server.add_all(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big"),
                                                 namespace("kube-system", uid)])
            emus[uid].reconcile()
        yield a, emus["uid-a"], b, emus["uid-b"], two_context_kubeconfig(tmp_path / "kubeconfig", a, b)


def _cordoned(server, node):
    return bool(server.store[ObjectKey("v1", "nodes", "", node)]["spec"].get("unschedulable"))


def test_apply_then_resume_after_a_transient_500_and_the_guards(clusters, tmp_path):
    a, emu_a, b, emu_b, kc = clusters
    journal = tmp_path / "j.jsonl"
    fail = {"on": True}
    a.faults.append(lambda r: status_reply(500, "InternalError", "etcd leader changed")
                    if r.path.endswith("/eviction") and fail["on"] else None)
    first = cli("--kubeconfig", str(kc), "--for", "ml/big", "--apply", "--yes", "--journal", str(journal),
                "-o", "json")
    assert first.returncode == 1, first.stderr
    report = valid_report(first.stdout)
    assert report["status"] == "stopped" and report["resumable"] and "etcd leader changed" in report["message"]
    assert emu_a.evictions == [] and not any(_cordoned(a, n) for n in report["uncordoned"])
    node = report["uncordoned"][0]
    # the guards: no demo/snapshot source, no other cluster (whose admin cordoned a node of the same name)
    demo = cli("--demo", "--resume", str(journal))
    assert demo.returncode == 2 and "drop --demo" in demo.stderr and len(demo.stderr.strip().splitlines()) == 1
    b.store[ObjectKey("v1", "nodes", "", node)]["spec"]["unschedulable"] = True
    other = cli("--kubeconfig", str(kc), "--context", "b", "--resume", str(journal))
    assert other.returncode == 2 and "another cluster" in other.stderr and "Traceback" not in other.stderr
    assert emu_b.cordon_patches == [] and emu_b.evictions == [] and _cordoned(b, node)
    # the transient error is over: resume continues and finishes
    fail["on"] = False
    again = cli("--kubeconfig", str(kc), "--resume", str(journal), "-o", "json")
    assert again.returncode == 0, again.stderr
    assert valid_report(again.stdout)["status"] == "finished"
    assert len(emu_a.evictions) == 3 and not _cordoned(a, node)
    done = cli("--kubeconfig", str(kc), "--resume", str(journal))
    assert done.returncode == 0 and "already finished" in done.stdout
    assert len(emu_a.evictions) == 3


def test_apply_table_output_and_an_existing_journal(clusters, tmp_path):
    a, emu_a, b, emu_b, kc = clusters
    journal = tmp_path / "j.jsonl"
    r = cli("--kubeconfig", str(kc), "--size", "2", "--apply", "--yes", "--journal", str(journal))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("finished: 1 move done") and "uncordoned: gpu-" in r.stdout
    assert "dry run" not in r.stderr and "about to: cordon" in r.stderr  # the plan is shown before acting
    again = cli("--kubeconfig", str(kc), "--for", "ml/big", "--apply", "--journal", str(journal))
    assert again.returncode == 2 and "another plan" in again.stderr
    assert "Apply these" not in again.stderr  # refused before asking
    assert len(emu_a.evictions) == 1


def test_apply_without_yes_asks_and_no_means_nothing_happens(clusters, tmp_path):
    a, emu_a, b, emu_b, kc = clusters
    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "defrag", "--kubeconfig", str(kc), "--for",
                        "ml/big", "--apply", "--journal", str(tmp_path / "j")], input="n\n", capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "Apply these 3 moves" in r.stderr
    assert emu_a.evictions == [] and emu_a.cordon_patches == [] and not (tmp_path / "j").exists()


@pytest.mark.parametrize("content, words", [
    (b'["a list"]\n', "not a journal record"),
    (b'{"event": "plan"}\n', "field 'plan' missing"),
    (b'\xff\xfe\n', "not UTF-8"),
    (b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    (b"", "is empty"),
])
def test_a_corrupt_journal_is_refused_with_one_line_and_exit_2(clusters, tmp_path, content, words):
    a, emu_a, b, emu_b, kc = clusters
    journal = tmp_path / "bad.jsonl"
    journal.write_bytes(content)
    r = cli("--kubeconfig", str(kc), "--resume", str(journal))
    assert r.returncode == 2, r.stdout + r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert emu_a.cordon_patches == [] and emu_a.evictions == []


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_run_uncordons_leaves_a_resumable_journal_and_exits_128_plus_n(clusters, tmp_path, sig, code):
    a, emu_a, b, emu_b, kc = clusters
    emu_a.lag = 10_000  # the replacement never runs: the executor is waiting when the signal comes
    journal = tmp_path / "j.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "defrag", "--kubeconfig", str(kc), "--for",
                             "ml/big", "--apply", "--yes", "--journal", str(journal), "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not emu_a.evictions and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert emu_a.evictions, "the run never reached its first eviction"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    report = valid_report(out)
    assert report["status"] == "stopped" and report["resumable"]
    assert report["uncordoned"] and not any(_cordoned(a, n) for n in report["uncordoned"])
    assert json.loads(journal.read_text().splitlines()[-1])["status"] == "stopped"
    emu_a.lag = 0
    emu_a.release_pending()
    again = cli("--kubeconfig", str(kc), "--resume", str(journal), "-o", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "finished" and len(emu_a.evictions) == 3


def test_an_unreachable_cluster_is_one_line_and_nothing_is_written(clusters, tmp_path):
    a, emu_a, b, emu_b, kc = clusters
    a.faults.append(lambda r: status_reply(503, "ServiceUnavailable", "apiserver is shutting down")
                    if r.path.endswith("/namespaces/kube-system") else None)
    journal = tmp_path / "j.jsonl"
    r = cli("--kubeconfig", str(kc), "--for", "ml/big", "--apply", "--yes", "--journal", str(journal))
    last = r.stderr.strip().splitlines()[-1]  # after the plan shown before acting
    assert r.returncode == 2 and "shutting down" in last and "Traceback" not in r.stderr
    assert not journal.exists() and emu_a.cordon_patches == []
