"""Bad input: one line on stderr naming file/object/field, exit code 2, no traceback."""

import gzip
import json
import subprocess
import sys

import pytest

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}}}


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          input=stdin, timeout=60)


def pod_with(resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "ml"},
            "spec": {"containers": [{"name": "c", "resources": resources}]}}


def as_list(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


CASES = {
    "malformed-json": ('{"kind": "List", "items": [', "malformed JSON"),
    "malformed-yaml": ("kind: List\nitems:\n  - {a: [1,\n", "malformed YAML"),
    "alias-bomb": ("a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                   "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                   "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                   "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n", "alias"),
    "wrong-type": (as_list(NODE, pod_with("lots")), "Pod/ml/train-0: field spec.containers[0].resources"),
    "bad-quantity": (as_list(NODE, pod_with({"requests": {"memory": "1.5 Gi"}})),
                     "Pod/ml/train-0: field spec.containers[0].resources.requests.memory"),
    "missing-name": (as_list({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ml"}}),
                     "field metadata.name"),
    "missing-kind": (as_list({"apiVersion": "v1", "metadata": {"name": "x"}}), "field kind"),
    "empty": ("", "empty file"),
    "only-comments": ("# nothing here\n", "no objects"),
    "scalar": ("42\n", "expected a Kubernetes object"),
    "items-not-list": ('{"kind": "List", "apiVersion": "v1", "items": 3}', "field items"),
    "node-bad-allocatable": (as_list({**NODE, "status": {"allocatable": {"cpu": "8 cores"}}}),
                             "Node/gpu-1: field status.allocatable.cpu"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_snapshot_is_one_line_exit_2(tmp_path, case):
    text, expected = CASES[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text)
    r = run("status", "--snapshot", str(path))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(path) in lines[0]
    assert expected in lines[0]


def test_unknown_kinds_are_kept_not_fatal(tmp_path):
    path = tmp_path / "mixed.json"
    path.write_text(as_list(NODE, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}))
    r = run("status", "--snapshot", str(path), "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["gpus"]["total"] == 8


def test_missing_path(tmp_path):
    r = run("status", "--snapshot", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "no such file or directory" in r.stderr and "Traceback" not in r.stderr


def test_unreadable_path(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text(as_list(NODE))
    path.chmod(0)
    try:
        r = run("status", "--snapshot", str(path))
    finally:
        path.chmod(0o600)
    if r.returncode == 0:
        pytest.skip("running as root: file permissions do not stop reads")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "dump.json.gz"
    path.write_bytes(gzip.compress(as_list(NODE).encode())[:30])
    r = run("status", "--snapshot", str(path))
    assert r.returncode == 2 and "gzip" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_binary_garbage(tmp_path):
    path = tmp_path / "garbage.yaml"
    path.write_bytes(b"\xff\xfe\x00kind: \x80\x81")
    r = run("status", "--snapshot", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_empty_directory(tmp_path):
    r = run("status", "--snapshot", str(tmp_path))
    assert r.returncode == 2 and "no .json/.yaml" in r.stderr


def test_unknown_demo_variant():
    r = run("status", "--demo", "bogus")
    assert r.returncode == 2 and "unknown demo variant" in r.stderr and "Traceback" not in r.stderr


def test_stdin_snapshot():
    r = run("status", "--snapshot", "-", "-o", "json", stdin=as_list(NODE))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["gpu_nodes"] == 1
