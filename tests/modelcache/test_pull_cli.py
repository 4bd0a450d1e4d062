"""`kubegpu models pull` as a process: SIGKILL at random moments, bad input, exit codes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kubegpu.modelcache import store

from .source_server import SourceServer, cache_object, write_cache
from .test_pull import V1, V2, payload

SRC = str(Path(__file__).resolve().parents[2] / "src")
FAST = {"retry": {"attempts": 50, "backoffSeconds": 0.05, "maxBackoffSeconds": 0.2}, "storage": {"headroom": "0"}}


def kubegpu(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))
    return subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run(*args: str) -> tuple[int, str, str]:
    proc = kubegpu(*args)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def current_files_verify(root: Path, versions: dict[str, dict[str, bytes]]) -> str:
    """The version `current` points at, after checking every byte of it."""
    cur = store.current_version(root, "llama")
    assert cur in versions, cur
    for path, data in versions[cur].items():
        assert (root / "llama" / "current" / path).read_bytes() == data
    return cur


def test_sigkill_at_random_moments_never_breaks_current(tmp_path):
    root = tmp_path / "root"
    big = {**V2, "weights/part-3.bin": payload(1_500_000, 4)}
    with SourceServer(V1) as s1:
        f1 = write_cache(tmp_path / "v1.yaml", cache_object("llama", "v1", V1, {"url": s1.url}, **FAST))
        assert run("models", "pull", "--cache", str(f1), "--root", str(root))[0] == 0
    rng = random.Random(1234)
    with SourceServer(big) as src:
        src.rate = 1_500_000  # ~1.5 s for the whole version: kills land in every phase
        src.resets["weights/part-3.bin"] = (700_000, 2)
        f2 = write_cache(tmp_path / "v2.yaml", cache_object("llama", "v2", big, {"url": src.url}, **FAST))
        seen, mid_pull = set(), 0
        for _ in range(6):
            requests = len(src.log)
            proc = kubegpu("models", "pull", "--cache", str(f2), "--root", str(root))
            while len(src.log) == requests and proc.poll() is None:  # until the pull is under way
                seen.add(current_files_verify(root, {"v1": V1, "v2": big}))
                time.sleep(0.01)
            deadline = time.monotonic() + rng.uniform(0.0, 0.35)
            while time.monotonic() < deadline and proc.poll() is None:  # the old version stays usable throughout
                seen.add(current_files_verify(root, {"v1": V1, "v2": big}))
                time.sleep(0.01)
            mid_pull += proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            seen.add(current_files_verify(root, {"v1": V1, "v2": big}))
        assert mid_pull >= 2  # kills landed while bytes were moving (the rest: after the switch)
        code, out, err = run("models", "pull", "--cache", str(f2), "--root", str(root), "-o", "json")
    assert code == 0, err
    assert current_files_verify(root, {"v2": big}) == "v2"
    assert yaml.safe_load(out)["state"] == "Verified"
    assert not list((root / "llama").glob(".*"))  # no staging or half-deleted folder left behind


def test_corrupted_partial_is_refetched_never_switched_to(tmp_path):
    with SourceServer(V1) as src:
        f = write_cache(tmp_path / "c.yaml", cache_object("llama", "v1", V1, {"url": src.url}, **FAST))
        staging = store.staging_dir(tmp_path / "root", "llama", "v1")
        (staging / "weights").mkdir(parents=True)
        (staging / "weights" / "part-1.bin.partial").write_bytes(b"\0" * len(V1["weights/part-1.bin"]))
        code, _, err = run("models", "pull", "--cache", str(f), "--root", str(tmp_path / "root"))
        assert code == 0, err
        assert src.ranges("weights/part-1.bin")[-1] is None  # fetched again from byte 0
    current_files_verify(tmp_path / "root", {"v1": V1})


BAD = [
    ("unknown field", lambda o: o["spec"].update(colour="red"), "spec.colour"),
    ("missing version", lambda o: o["spec"].pop("version"), "spec.version"),
    ("path escapes", lambda o: o["spec"]["files"][0].update(path="../../etc/passwd"), "spec.files[0].path"),
    ("absolute path", lambda o: o["spec"]["files"][0].update(path="/etc/passwd"), "spec.files[0].path"),
    ("bad digest", lambda o: o["spec"]["files"][1].update(sha256="abc"), "spec.files[1].sha256"),
    ("negative size", lambda o: o["spec"]["files"][1].update(size=-1), "spec.files[1].size"),
    ("digest mismatch", lambda o: o["spec"]["files"][0].update(sha256="0" * 64), "spec.files[0].sha256"),
    ("size lies", lambda o: o["spec"]["files"][0].update(size=3), "spec.files[0].size"),
]


@pytest.mark.parametrize("label,mutate,field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line_exit_2_nothing_switched_nothing_deleted(tmp_path, label, mutate, field):
    root = tmp_path / "root"
    with SourceServer({**V1}) as src:
        good = write_cache(tmp_path / "v1.yaml", cache_object("llama", "v1", V1, {"url": src.url}, **FAST))
        assert run("models", "pull", "--cache", str(good), "--root", str(root))[0] == 0
        before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        obj = cache_object("llama", "v2", V1, {"url": src.url}, **FAST)
        mutate(obj)
        bad = write_cache(tmp_path / "bad.yaml", obj)
        code, out, err = run("models", "pull", "--cache", str(bad), "--root", str(root))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ModelCache/llama" in lines[0] and f"field {field}" in lines[0], err
    assert "Traceback" not in err
    assert store.current_version(root, "llama") == "v1"
    after = {str(p.relative_to(root)) for p in root.rglob("*")}
    assert set(before) <= after  # nothing deleted
    current_files_verify(root, {"v1": V1})


def test_cross_host_redirect_exits_2_naming_the_source(tmp_path):
    with SourceServer(V1) as src:
        src.redirects["config.json"] = "http://localhost:1/x"
        f = write_cache(tmp_path / "c.yaml", cache_object("llama", "v1", V1, {"url": src.url}, **FAST))
        code, _, err = run("models", "pull", "--cache", str(f), "--root", str(tmp_path / "root"))
    assert code == 2 and "field spec.source" in err and "another host" in err
    assert store.current_version(tmp_path / "root", "llama") is None


def test_disk_full_on_small_tmpfs_refuses_and_cleans_up(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 1 MiB tmpfs here: {done.stderr.decode().strip()}")
    try:
        big = {"w.bin": payload(1_500_000, 9)}
        with SourceServer(big) as src:
            f = write_cache(tmp_path / "c.yaml", cache_object("llama", "v1", big, {"url": src.url},
                                                             storage={"headroom": "100k"}))
            code, _, err = run("models", "pull", "--cache", str(f), "--root", str(mnt))
            assert src.log == []
        assert code == 1 and "headroom" in err and len(err.strip().splitlines()) == 1
        assert not list((mnt / "llama").glob(".*staging*"))
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_https_source_verified_against_the_system_trust(tmp_path, server_certs, monkeypatch):
    with SourceServer(V1, certs=server_certs) as src:
        f = write_cache(tmp_path / "c.yaml", cache_object("llama", "v1", V1, {"url": src.url}, **FAST))
        code, _, err = run("models", "pull", "--cache", str(f), "--root", str(tmp_path / "untrusted"))
        assert code == 1 and "certificate" in err and "gave up" not in err  # never trusted, not retried
        monkeypatch.setenv("SSL_CERT_FILE", str(server_certs.ca_file))  # the CA joins the trusted roots
        code, _, err = run("models", "pull", "--cache", str(f), "--root", str(tmp_path / "root"))
    assert code == 0, err
    current_files_verify(tmp_path / "root", {"v1": V1})
