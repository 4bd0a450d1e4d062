"""Issue 23: FIFOs without writers, odd shapes (file names, closed stdout, kubeconfig URLs, CRD fields)
and errors that must say which file: one line, exit 2, in a real process where it matters."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from inprocess import run_inprocess
from .conftest import SRC, popen, run
from .test_inputs import GPU_POOL, NODE, dump, pod, refused

NODE_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,8,V100M32\n"
POD_CSV = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,1024,1,1000\n"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
users: [{{name: u, user: {{token: abc}}}}]
"""


# --- FIFOs without writers: every file input is bounded in time, in a real process ----------------

@pytest.mark.parametrize("args", [
    ["status", "--snapshot", "{fifo}"],
    ["why", "--all", "--snapshot", "{ok}", "--snapshot", "{fifo}"],
    ["nccl", "{fifo}"],
    ["simulate", "inflation", "--nodes", "{nodes}", "--pods", "{fifo}"],
    ["simulate", "inflation", "--nodes", "{fifo}", "--pods", "{pods}"],
    ["frag", "--demo", "--mix", "{fifo}"],
    ["audit", "--demo", "--config", "{fifo}"],
    ["status", "--kubeconfig", "{fifo}"],
], ids=["snapshot", "second-snapshot", "nccl", "pods-csv", "nodes-csv", "mix", "audit-config", "kubeconfig"])
def test_a_fifo_without_writer_is_one_line_within_the_read_timeout(tmp_path, monkeypatch, args):
    fifo = tmp_path / "never.json"
    os.mkfifo(fifo)
    (tmp_path / "nodes.csv").write_text(NODE_CSV)
    (tmp_path / "pods.csv").write_text(POD_CSV)
    names = {"fifo": str(fifo), "ok": dump(tmp_path, NODE), "nodes": str(tmp_path / "nodes.csv"),
             "pods": str(tmp_path / "pods.csv")}
    monkeypatch.setenv("KUBEGPU_READ_TIMEOUT", "1")
    r = run(*[a.format(**names) for a in args], timeout=60)  # a hang fails here (TimeoutExpired)
    refused(r, str(fifo), "no end of input after 1 s")


def test_a_trace_fifo_without_writer_is_bounded(tmp_path, monkeypatch):
    from kubegpu.errors import InputError
    from kubegpu.simulate.trace_format import load_trace

    fifo = tmp_path / "jobs.csv"
    os.mkfifo(fifo)
    monkeypatch.setenv("KUBEGPU_READ_TIMEOUT", "0.5")
    with pytest.raises(InputError, match="jobs.csv: no end of input after 0.5 s"):
        load_trace(fifo, classes={})


def test_a_kubeconfig_from_process_substitution_is_read():
    """`--kubeconfig <(...)` is a FIFO with a writer: read like a file (here: its server refuses)."""
    env = {**os.environ, "KC": KUBECONFIG.format(server="https://127.0.0.1:1"), "KUBEGPU_TIMEOUT": "5",
           "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run(["bash", "-c", f"'{sys.executable}' -m kubegpu.cli.main status "
                           "--kubeconfig <(printf '%s' \"$KC\")"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "connection refused" in proc.stderr, proc.stderr


# --- file names that are not UTF-8 -------------------------------------------------------------------

def test_non_utf8_file_names_are_escaped_never_crash(tmp_path):
    folder = os.fsencode(tmp_path)
    log = folder + b"/rank\xff.log"
    with open(log, "w") as fh:
        fh.write("host1:12:34 [0] NCCL WARN NET/Socket : connect to 10.0.0.2<43210> failed : Connection refused\n")
    snap = folder + b"/dump\xfe.json"
    with open(snap, "w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": [NODE, pod("p", "1", node="gpu-1")]}, fh)
    name, snap_name = os.fsdecode(log), os.fsdecode(snap)
    for fmt in ("json", "yaml", "table"):
        r = run("nccl", name, "-o", fmt)
        assert r.code == 1 and "internal error" not in r.stderr, r.stderr
        if fmt == "json":
            assert json.loads(r.stdout)["files"][0]["path"].endswith("rank\\xff.log")
    for args in (["status", "-o", "json"], ["doctor", "-o", "json"], ["audit", "-o", "sarif"], ["frag", "-o", "yaml"],
                 ["doctor", "-o", "html"], ["snapshot", "-o", "json"]):
        r = run(*args, "--snapshot", snap_name)
        assert r.code in (0, 1), (args, r.stderr)
    missing = run("nccl", os.fsdecode(folder + b"/gone\xff.log"))
    refused(missing, "gone\\xff.log: no such file")


# --- stdout closed before the first write ------------------------------------------------------------

@pytest.mark.parametrize("args", [["status", "--demo"], ["frag", "--demo", "-o", "json"], ["why", "--all", "--demo"]])
def test_stdout_closed_before_start_is_one_error_line(args):
    proc = popen(*args, stdout=None, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and err.strip().splitlines() == [
        "error: stdout: cannot write: Bad file descriptor (stdout was closed before kubegpu started)"], err


def test_stdout_closed_does_not_stop_a_command_that_writes_a_file(tmp_path):
    out = tmp_path / "snap.json"
    proc = popen("snapshot", "--demo", "--file", str(out), stdout=None, stderr=subprocess.PIPE, text=True,
                 preexec_fn=lambda: os.close(1))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out.read_text())["kind"] == "List"


# --- kubeconfig server URLs and CRD fields of the wrong type ----------------------------------------

@pytest.mark.parametrize("server, says", [("https://[::1", "Invalid port"), ("https://[zz]:6443", "Invalid IPv6"),
                                          ("https://h:abc", "Invalid port")])
def test_a_kubeconfig_server_that_is_not_a_url_is_one_line(tmp_path, server, says):
    config = tmp_path / "kc.yaml"
    config.write_text(KUBECONFIG.format(server=server))
    refused(run_inprocess("status", "--kubeconfig", str(config)), "kc.yaml: cluster 'c'", "is not a valid URL", says)


@pytest.mark.parametrize("field, value", [("requirements", 7), ("requirements", "gpu"), ("taints", 3)])
def test_a_karpenter_nodepool_field_of_the_wrong_type_is_named(tmp_path, field, value):
    pool = json.loads(json.dumps(GPU_POOL))
    pool["spec"]["disruption"] = {}
    pool["spec"]["template"]["spec"] = {"requirements": [], field: value}  # taints are read when no requirement says GPU
    refused(run_inprocess("audit", "--snapshot", dump(tmp_path, NODE, pool)),
            f"NodePool/gpu: field spec.template.spec.{field}: expected a list")


# --- errors about an object name the file it came from ----------------------------------------------

def test_an_engine_error_names_the_file_among_several_snapshots(tmp_path):
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vj", "namespace": "ml"},
           "spec": "a string"}
    member = pod("vj-w-0", "2")
    member["metadata"]["labels"] = {"volcano.sh/job-name": "vj"}
    (tmp_path / "dump").mkdir()
    first = dump(tmp_path / "dump", NODE, member, name="a.json")
    second = dump(tmp_path / "dump", job, name="b.json")
    for args in (["--snapshot", first, "--snapshot", second], ["--snapshot", str(tmp_path / "dump")]):
        refused(run_inprocess("why", "--all", *args), f"{second}: Job/ml/vj: field spec: expected an object")


def test_path_text_escapes_what_no_encoder_accepts():
    from kubegpu.guards.bounded import path_text

    assert path_text(os.fsdecode(b"logs/r\xff.log")) == "logs/r\\xff.log"  # as `ls -b` shows it
    assert path_text("a\ud800b") == "a\\ud800b" and path_text("é/plain") == "é/plain"
    assert path_text(b"r\xfe") == "r\\xfe"


@pytest.mark.parametrize("args", [["status", "--snapshot", "-"], ["nccl", "-"]])
def test_stdin_closed_before_start_is_one_error_line(args):
    proc = popen(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(0))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and "stdin is closed" in err, err
