"""Hostile `simulate sweep` targets: --address, --out, the resume journal, a full disk. One line, exit 2."""

from __future__ import annotations

import json
import os
import errno
import socket

import pytest

from inprocess import run_inprocess
from tests.hostile.conftest import run

BASE = """name: größe
duration: 1h
cluster:
  node_groups:
    gpu: {gpus: 8, min: 1, max: 2, initial: 1, price_per_hour: 10}
workload:
  generators:
    - kind: poisson
      name: batch
      rate_per_hour: 4
      median_duration: 10m
      pod: {gpus: 1, cpu: 2, memory: 4Gi}
"""
GRID = "workload.generators.0.rate_per_hour: [2, 3]\n"


@pytest.fixture
def files(tmp_path):
    scenario, grid = tmp_path / "s.yaml", tmp_path / "grid.yaml"
    scenario.write_text(BASE)
    grid.write_text(GRID)
    return str(scenario), str(grid)


def sweep(files, *args, timeout=None):
    scenario, grid = files
    argv = ("simulate", "sweep", scenario, "--grid", grid, "--workers", "1", *args)
    return run(*argv, timeout=timeout) if timeout else run_inprocess(*argv)


def one_line_exit_2(r, *says):
    assert r.code == 2, (r.code, r.stderr[-500:])
    assert len(r.err_lines) == 1, r.stderr[-1000:]
    for text in says:
        assert text in r.err_lines[0], r.err_lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address, says", [
    ("hello", "not a dask scheduler address"),
    ("inproc://", "inproc:// is not supported"),
    ("ucx://127.0.0.1:8786", "ucx:// is not supported"),
    ("tls://127.0.0.1:8786", "tls:// needs certificates"),
    ("tcp://[::1", "not a dask scheduler address"),
    ("tcp://127.0.0.1", "a host and a port"),
    ("tcp://127.0.0.1:99999", "Port out of range"),
])
def test_a_bad_address_is_one_line(files, address, says):
    one_line_exit_2(sweep(files, "--address", address), "--address", says)


def test_a_port_nothing_listens_on_is_one_line_at_once(files):
    """Before: dask retried for 30 s ("Timed out trying to connect"), then exit 3. The refusal is known
    at once: the message is the connect's own answer, not a timeout."""
    r = sweep(files, "--address", f"tcp://127.0.0.1:{free_port()}", timeout=120)
    one_line_exit_2(r, "cannot reach the dask scheduler within 10 s", "Connection refused")


def test_a_host_that_does_not_resolve_is_one_line(files):
    r = sweep(files, "--address", "tcp://no-such-host.invalid:8786", timeout=120)
    one_line_exit_2(r, "cannot reach the dask scheduler within 10 s")


@pytest.mark.parametrize("target", ["file", "fifo", "/dev/null", "under-a-file"])
def test_out_that_cannot_be_a_folder_is_one_line(files, tmp_path, target):
    plain = tmp_path / "plain"
    plain.write_text("keep me\n")
    path = {"file": str(plain), "/dev/null": "/dev/null", "under-a-file": str(plain / "out"),
            "fifo": str(tmp_path / "fifo")}[target]
    if target == "fifo":
        os.mkfifo(path)
    one_line_exit_2(sweep(files, "--out", path, timeout=60), path)
    assert plain.read_text() == "keep me\n"


def test_out_under_a_read_only_folder_is_one_line(files, readonly_dir):
    out = readonly_dir / "out"
    one_line_exit_2(sweep(files, "--out", str(out)), str(out))
    one_line_exit_2(sweep(files, "--out", str(readonly_dir)), "runs.ndjson")


def test_results_json_is_the_json_writer_text(files, tmp_path):
    """results.json is the same text as `-o json` (the one JSON writer): UTF-8, not \\u escapes."""
    out = tmp_path / "out"
    r = sweep(files, "--out", str(out), "-o", "json")
    assert r.code == 0, r.stderr
    text = (out / "results.json").read_text(encoding="utf-8")
    assert text == r.stdout and '"scenario": "größe"' in text
    lines = (out / "runs.ndjson").read_bytes().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["result"]["scenario"] == "größe" for line in lines)


@pytest.mark.parametrize("journal, says", [
    (b"\xff\xfe\n", "line 1 of"),
    (b'{"params": {}, "seed": 1, "result": {}}\nnot json\n', "line 2 of"),
    (b'{"params": [], "seed": 1, "result": {}}\n', "line 1 of"),
    (b'{"params": {}, "seed": "1", "result": {}}\n', "line 1 of"),
])
def test_a_damaged_journal_says_which_line(files, tmp_path, journal, says):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs.ndjson").write_bytes(journal)
    one_line_exit_2(sweep(files, "--out", str(out)), says, "runs.ndjson is damaged")
    assert (out / "runs.ndjson").read_bytes() == journal  # left as it was
    assert not (out / "results.csv").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_journal_that_is_not_a_file_is_refused_without_waiting(files, tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    journal = out / "runs.ndjson"
    journal.mkdir() if kind == "folder" else os.mkfifo(journal)
    one_line_exit_2(sweep(files, "--out", str(out), timeout=60), "runs.ndjson", "not a regular file")


def test_a_run_cut_short_is_redone_and_the_journal_stays_one_run_per_line(files, tmp_path):
    out = tmp_path / "out"
    assert sweep(files, "--out", str(out)).code == 0
    journal = out / "runs.ndjson"
    first, second = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(first + second[: len(second) // 2])  # interrupted in the middle of the second run
    r = sweep(files, "--out", str(out), "-o", "json")
    assert r.code == 0, r.stderr
    lines = journal.read_bytes().splitlines(keepends=True)
    assert lines[0] == first and len(lines) == 2 and all(json.loads(line) for line in lines)
    assert [row["params"] for row in json.loads(r.stdout)] == [json.loads(line)["params"] for line in lines]


def test_a_full_disk_during_the_journal_is_exit_2_not_a_lying_exit_0(files, small_disk):
    """Before: the sweep ended 0 with runs missing. Every journal write is checked."""
    out = small_disk / "out"
    out.mkdir()
    fd = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk: not one journal line fits
        while os.write(fd, b"\0" * 512) > 0:
            pass
    except OSError as err:
        assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)
    r = sweep(files, "--out", str(out))
    one_line_exit_2(r, "runs.ndjson", "No space left on device")
    assert not (out / "results.json").exists()


def test_a_full_disk_for_the_results_is_exit_2_and_leaves_no_partial_file(files, tmp_path, monkeypatch):
    import kubegpu.cli.writer as writer

    real = os.write

    def write(fd, data):
        if "results.json" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(writer.os, "write", write)
    out = tmp_path / "out"
    one_line_exit_2(sweep(files, "--out", str(out)), "results.json", "No space left on device")
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "runs.ndjson"]


def test_a_short_journal_write_is_exit_2(files, tmp_path, monkeypatch):
    """A write that writes nothing (an ENOSPC seam, as test_outputs does) is an error, not a lost run."""
    import kubegpu.cli.writer as writer

    real = os.write

    def write(fd, data):
        return 0 if os.readlink(f"/proc/self/fd/{fd}").endswith("runs.ndjson") else real(fd, data)

    monkeypatch.setattr(writer.os, "write", write)
    out = tmp_path / "out"
    one_line_exit_2(sweep(files, "--out", str(out)), "runs.ndjson", "short write")
