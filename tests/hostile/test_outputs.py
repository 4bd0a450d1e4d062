"""Every output path goes through the one writer: checked, atomic for files, never replacing a device."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.cli import render, writer
from kubegpu.errors import OutputError

from inprocess import run_inprocess
from .conftest import popen, run


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- disk full, read-only folder ----------------------------------------------------------------

def test_stdout_on_a_full_disk_is_one_line_exit_2():
    with open("/dev/full", "w") as full:
        r = run("status", "--demo", "-o", "json", stdout=full)
    assert r.code == 2
    assert r.err_lines == ["error: stdout: cannot write: No space left on device"]


def test_table_on_a_full_disk_is_one_line_exit_2():
    with open("/dev/full", "w") as full:
        r = run("status", "--demo", stdout=full)
    assert (r.code, len(r.err_lines)) == (2, 1), r.stderr
    assert "No space left on device" in r.stderr


@pytest.mark.parametrize("name", ["demo.json", "demo.json.gz", "demo.yaml"])
def test_file_on_a_full_disk_leaves_nothing_and_says_so(small_disk, name):
    target = small_disk / name
    r = run("snapshot", "--demo", "--file", str(target))
    assert r.code == 2, r.stderr
    assert r.err_lines == [f"error: {target}: cannot write: No space left on device"]
    assert leftovers(small_disk) == []  # neither the file nor a temp file


def test_full_disk_keeps_the_previous_file_intact(small_disk):
    target = small_disk / "rules.yaml"
    target.write_text("old\n")
    r = run("snapshot", "--demo", "--file", str(target))
    assert r.code == 2
    assert target.read_text() == "old\n" and leftovers(small_disk) == ["rules.yaml"]


def test_read_only_folder_is_one_line_exit_2(readonly_dir):
    r = run("rules", "--file", str(readonly_dir / "rules.yaml"))
    assert r.code == 2, r.stderr
    assert len(r.err_lines) == 1 and "rules.yaml" in r.stderr
    assert "Read-only file system" in r.stderr or "Permission denied" in r.stderr
    assert leftovers(readonly_dir) == []


def test_missing_folder_and_a_folder_as_target(tmp_path):
    r = run_inprocess("rules", "--file", str(tmp_path / "nope" / "r.yaml"))
    assert (r.code, r.err_lines) == (2, [f"error: {tmp_path / 'nope'}: folder does not exist"])
    r = run_inprocess("rules", "--file", str(tmp_path))
    assert (r.code, r.err_lines) == (2, [f"error: {tmp_path}: is a directory"])


# --- targets that are not regular files ---------------------------------------------------------

def test_dev_null_stays_a_character_device():
    before = os.stat("/dev/null")
    r = run("snapshot", "--demo", "--file", "/dev/null")
    assert r.code == 0, r.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    r = run("snapshot", "--demo", "--file", str(fifo), timeout=60)
    reader.join(timeout=60)
    assert r.code == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["kind"] == "List"
    assert leftovers(tmp_path) == ["out.fifo"]


def test_symlink_keeps_the_link_and_replaces_its_target(tmp_path):
    real = tmp_path / "real" / "rules.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    r = run_inprocess("rules", "--file", str(link))
    assert r.code == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert yaml.safe_load(real.read_text())["kind"] == "PrometheusRule"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # an existing file keeps its mode
    assert leftovers(real.parent) == ["rules.yaml"]


# --- closed pipe --------------------------------------------------------------------------------

def test_closed_pipe_ends_quietly_like_kubectl():
    """`kubegpu snapshot --demo | head -c 100`: no traceback, no message, status 141 (128+SIGPIPE) as kubectl."""
    proc = popen("snapshot", "--demo", "-o", "json", stdout=-1, stderr=-1)
    proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_closed_pipe_during_a_table_is_not_exit_1():
    proc = popen("status", "--demo", "-o", "wide", stdout=-1, stderr=-1)
    proc.stdout.close()  # closed before the first write
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, err
    assert err == b""


# --- the writer itself --------------------------------------------------------------------------

def test_a_write_of_zero_bytes_is_an_error_not_a_silent_truncation(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    with pytest.raises(OutputError, match="short write"):
        writer.write_atomic(tmp_path / "x.json", b"{}")
    assert leftovers(tmp_path) == []


def test_eio_is_an_output_error_and_epipe_is_closed(tmp_path, monkeypatch):
    def fail(code):
        def write(fd, data):
            raise OSError(code, os.strerror(code))
        return write

    monkeypatch.setattr(os, "write", fail(errno.EIO))
    with pytest.raises(OutputError, match="Input/output error"):
        writer.write_atomic(tmp_path / "x.json", b"{}")
    monkeypatch.setattr(os, "write", fail(errno.EPIPE))
    with pytest.raises(writer.OutputClosed):
        writer.write_all(1, b"x", "stdout")


def test_partial_writes_are_continued(tmp_path, monkeypatch):
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    writer.write_atomic(tmp_path / "x.txt", b"0123456789" * 100)
    assert (tmp_path / "x.txt").read_bytes() == b"0123456789" * 100


plain = st.recursive(st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.text(max_size=8),
                     lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children,
                                                                                         max_size=4),
                     max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(plain)
def test_streamed_json_is_the_same_text_as_formatting_it_whole(data):
    whole = msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n"
    assert b"".join(render.json_chunks(data)) == whole


@settings(max_examples=150, deadline=None)
@given(plain)
def test_streamed_yaml_loads_back_to_the_data(data):
    assert yaml.safe_load(b"".join(render.yaml_chunks(data))) == data


def test_emit_stream_writes_a_json_list_item_by_item(tmp_path):
    seen = []

    def items():
        for i in range(3):
            seen.append(i)
            yield {"n": i}

    render.emit_stream(items(), "json", file=tmp_path / "l.json")
    assert json.loads((tmp_path / "l.json").read_text()) == [{"n": 0}, {"n": 1}, {"n": 2}]
    render.emit_stream(iter(()), "yaml", file=tmp_path / "e.yaml")
    assert yaml.safe_load((tmp_path / "e.yaml").read_text()) == []


# --- the -o / --file conventions ----------------------------------------------------------------

def test_kubectl_equals_form_of_dash_o():
    assert json.loads(run_inprocess("rules", "-o=json").stdout)["kind"] == "PrometheusRule"


def test_rules_dash_o_yaml_is_the_format_not_a_file_named_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_inprocess("rules", "-o", "yaml")
    assert r.code == 0 and yaml.safe_load(r.stdout)["kind"] == "PrometheusRule"
    assert leftovers(tmp_path) == []


def test_rules_dash_o_file_still_works_with_a_note(tmp_path):
    target = tmp_path / "gpu-rules.json"
    r = run_inprocess("rules", "-o", str(target))
    assert r.code == 0
    assert r.err_lines[-1].startswith("note: -o FILE is deprecated; use --file")  # after success
    assert json.loads(target.read_text())["kind"] == "PrometheusRule"  # .json: JSON


@pytest.mark.parametrize("args", [["snapshot", "--snapshot", "{missing}"], ["rules", "--for", "soon"],
                                  ["snapshot", "--demo", "--file", "{other}"]])
def test_a_deprecated_dash_o_file_that_then_fails_is_one_error_line(tmp_path, args):
    """Issue 23: the deprecation note is printed only once the command succeeded; an error stays one line."""
    names = {"missing": str(tmp_path / "missing.json"), "other": str(tmp_path / "b.json")}
    r = run_inprocess(*[a.format(**names) for a in args], "-o", str(tmp_path / "out.json"))
    assert r.code == 2 and len(r.err_lines) == 1 and r.err_lines[0].startswith("error: "), r.stderr


def test_usage_errors_are_one_line():
    r = run_inprocess("status", "--demo", "-o", "bogus")
    assert r.code == 2 and len(r.err_lines) == 1 and "see 'kubegpu status --help'" in r.stderr
    r = run_inprocess("nosuchcommand")
    assert r.code == 2 and len(r.err_lines) == 1


@pytest.mark.parametrize("flag", [["--context", "prod"], ["--kubeconfig", "kc.yaml"]])
def test_demo_with_a_live_cluster_option_is_refused(flag):
    r = run_inprocess("status", "--demo", *flag)
    assert r.code == 2 and len(r.err_lines) == 1 and flag[0] in r.stderr


def test_doctor_html_to_a_file(tmp_path):
    r = run_inprocess("doctor", "--demo", "-o", "html", "--file", str(tmp_path / "r.html"), "--section", "status")
    assert r.code == 0, r.stderr
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")
