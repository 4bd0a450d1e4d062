"""Each class of hostile input of issue 10, named: refused in one line (exit 2) or answered sensibly."""

from __future__ import annotations

import gzip
import json
import os
import threading

import pytest
import yaml

from inprocess import run_inprocess
from .conftest import run

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "uid": "u-node-1"},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, gpus="1", node=None, **spec):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
         "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}], **spec},
         "status": {"phase": "Running" if node else "Pending"}}
    if node:
        p["spec"]["nodeName"] = node
    return p


def dump(tmp_path, *items, name="c.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return str(path)


def refused(result, *needles):
    assert result.code == 2, result.stderr
    assert len(result.err_lines) == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


# --- quantities: the API server's ranges ---------------------------------------------------------

@pytest.mark.parametrize("value, says", [
    ("-3", "must be greater than or equal to 0"),
    ("1e30", "beyond the largest value"),
    ("8Ei", "beyond the largest value"),
    ("1" * 300, "characters long"),
    ("١٢", "does not match the Kubernetes quantity grammar"),
    ("1.5", "must be an integer"),
])
def test_bad_node_gpu_quantity_is_refused_naming_the_field(tmp_path, value, says):
    node = json.loads(json.dumps(NODE))
    node["status"]["allocatable"]["nvidia.com/gpu"] = value
    refused(run_inprocess("status", "--snapshot", dump(tmp_path, node)),
            "Node/gpu-1: field status.allocatable.nvidia.com/gpu", says)


@pytest.mark.parametrize("value", ["-1", "1e30", "١٢"])
def test_bad_pod_request_is_refused_naming_the_field(tmp_path, value):
    p = pod("p")
    p["spec"]["containers"][0]["resources"] = {"requests": {"memory": value}}
    refused(run_inprocess("frag", "--snapshot", dump(tmp_path, NODE, p)),
            "Pod/ml/p: field spec.containers[0].resources.requests.memory")


@pytest.mark.parametrize("where", ["claim", "volume"])
def test_bad_storage_quantity_of_a_claim_or_volume_is_refused_naming_the_field(tmp_path, where):
    """VolumeBinding reads claim requests and PV capacities: a bad one names its object and field."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "cache", "namespace": "ml"},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                      "resources": {"requests": {"storage": "50E" if where == "claim" else "10Gi"}}}}
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "nvme-0"},
              "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                       "capacity": {"storage": "-5Gi" if where == "volume" else "100Gi"}, "local": {"path": "/mnt"}},
              "status": {"phase": "Available"}}
    klass = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}
    p = pod("p", volumes=[{"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}])
    needle = ("PersistentVolumeClaim/ml/cache: field spec.resources.requests.storage" if where == "claim"
              else "PersistentVolume/nvme-0: field spec.capacity.storage")
    refused(run_inprocess("why", "ml/p", "--snapshot", dump(tmp_path, NODE, p, claim, volume, klass)), needle)


def test_the_largest_int64_memory_is_still_a_quantity(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["status"]["allocatable"]["memory"] = "9223372036854775807"
    assert run_inprocess("status", "--snapshot", dump(tmp_path, node)).code == 0


def test_priority_beyond_int32_is_refused(tmp_path):
    refused(run_inprocess("why", "--all", "--snapshot", dump(tmp_path, NODE, pod("p", priority=2**31))),
            "Pod/ml/p: field spec.priority", "int32")


def test_absurd_gpu_count_is_refused_not_allocated(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1000000000"
    refused(run_inprocess("frag", "--snapshot", dump(tmp_path, node)), "Node/gpu-1", "beyond any real node")


def test_an_absurd_count_label_is_refused_or_ignored_never_allocated(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["metadata"]["labels"] = {"nvidia.com/gpu.count": "999999999", "nvidia.com/gpu.replicas": "4"}
    refused(run_inprocess("status", "-o", "json", "--snapshot", dump(tmp_path, node)),
            "field metadata.labels[nvidia.com/gpu.count]", "beyond any real node")
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = "1e9"  # not a GFD count at all: read from the resource
    r = run_inprocess("status", "-o", "json", "--snapshot", dump(tmp_path, node))
    assert r.code == 0 and json.loads(r.stdout)["nodes"][0]["gpus"]["total"] == 2  # 8 replicas / 4


def test_a_pod_asking_a_million_gpus_is_explained_quickly(tmp_path):
    r = run_inprocess("why", "--all", "-o", "json", "--snapshot", dump(tmp_path, NODE, pod("huge", "1000000")))
    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)[0]
    assert report["schedulable"] is False and "Insufficient nvidia.com/gpu" in report["message"]


# --- duplicates, gzip, folders -----------------------------------------------------------------

def test_duplicates_in_one_file_and_the_same_file_twice_count_once(tmp_path):
    path = dump(tmp_path, NODE, NODE, pod("a", node="gpu-1"), pod("a", node="gpu-1"))
    once = json.loads(run_inprocess("frag", "-o", "json", "--snapshot", dump(tmp_path, NODE, pod("a", node="gpu-1"),
                                                                          name="once.json")).stdout)
    for args in (["--snapshot", path], ["--snapshot", path, "--snapshot", path]):
        r = run_inprocess("frag", "-o", "json", *args)
        assert r.code == 0
        assert json.loads(r.stdout)["gpus"] == once["gpus"] == {"total": 8, "allocated": 1, "free": 7} | {
            k: once["gpus"][k] for k in ("allocated", "free")}
        assert len(r.err_lines) == 1 and r.err_lines[0].startswith("warning: ") and "duplicate" in r.err_lines[0]


def test_truncated_gzip_is_refused_and_every_member_is_read(tmp_path):
    whole = gzip.compress(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE]}).encode())
    (tmp_path / "cut.json.gz").write_bytes(whole[:-10])
    refused(run_inprocess("status", "--snapshot", str(tmp_path / "cut.json.gz")), "cut short")
    second = dict(NODE, metadata={"name": "gpu-2"})
    members = gzip.compress(yaml.safe_dump(NODE).encode() + b"---\n") + gzip.compress(yaml.safe_dump(second).encode())
    (tmp_path / "two.yaml.gz").write_bytes(members)
    r = run_inprocess("status", "-o", "json", "--snapshot", str(tmp_path / "two.yaml.gz"))
    assert [n["name"] for n in json.loads(r.stdout)["nodes"]] == ["gpu-1", "gpu-2"]


def test_an_unreadable_folder_inside_the_snapshot_dir_is_reported(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    dump(tmp_path / "ok", NODE)
    (tmp_path / "locked").mkdir()
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    refused(run_inprocess("status", "--snapshot", str(tmp_path)), "locked", "Permission denied")


# --- encodings, nesting ------------------------------------------------------------------------

@pytest.mark.parametrize("name, data", [
    ("latin1.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE]}).encode().replace(b"gpu-1",
                                                                                                     b"gpu-\xe9")),
    ("latin1.yaml", b"apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-\xe9\n"),
    ("nul.json", json.dumps(NODE).encode().replace(b"gpu-1", b"gpu-\x001")),
    ("nul.yaml", b"apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-\x001\n"),
    ("deep.json", b'{"kind":"List","apiVersion":"v1","items":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}"),
    ("deep.yaml", b"kind: List\nitems:\n- " + b"[" * 100_000 + b"]" * 100_000 + b"\n"),
    ("twoline.yaml", b"apiVersion: v1\nkind: Node\nmetadata:\n  name: [a\n  labels: {\n"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_encodings_and_nesting_are_one_line(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    r = run("status", "--snapshot", str(tmp_path / name))  # a real process: a C-level crash would show
    refused(r, name)


# --- empty and degenerate clusters ------------------------------------------------------------

@pytest.mark.parametrize("items", [[], [pod("a"), pod("b", "2")], [dict(NODE, status={"allocatable": {"cpu": "4"}})]],
                         ids=["empty", "only-pods", "no-gpu-nodes"])
@pytest.mark.parametrize("args", [["status"], ["frag"], ["why", "--all"], ["audit"], ["doctor"],
                                  ["defrag", "--size", "2"], ["status", "-o", "json"], ["frag", "-o", "json"]])
def test_degenerate_clusters_get_an_answer(tmp_path, items, args):
    r = run_inprocess(*args, "--snapshot", dump(tmp_path, *items))
    assert r.code in (0, 1), r.stderr  # defrag: 1 = no possible plan
    assert r.stdout.strip()


def test_no_gpu_nodes_is_said(tmp_path):
    path = dump(tmp_path, dict(NODE, status={"allocatable": {"cpu": "4"}}))
    assert "no GPU nodes" in run_inprocess("status", "--snapshot", path).stdout
    assert "no GPU nodes" in run_inprocess("frag", "--snapshot", path).stdout


# --- cluster text printed literally ------------------------------------------------------------

def test_markup_and_escapes_in_names_and_messages_are_printed_literally(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["metadata"]["name"] = "big-[bold red]boom[/]"
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ml"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ml"}, "reason": "FailedMount",
             "type": "Warning", "message": "mount [/models] failed: [/dev/nvidia0 /dev/nvidiactl] \x1b]0;pwn\x07"}
    path = dump(tmp_path, node, pod("p", "9"), event)
    status = run_inprocess("status", "--snapshot", path)
    assert "big-[bold red]boom[/]" in status.stdout
    why = run_inprocess("why", "--all", "-o", "wide", "--snapshot", path)
    assert why.code == 0, why.stderr
    assert "big-[bold red]boom[/]" in why.stdout and "\x1b" not in why.stdout
    for args in (["audit", "-o", "wide"], ["doctor"]):
        r = run_inprocess(*args, "--snapshot", path)
        assert r.code in (0, 1), r.stderr
        assert "\x1b" not in r.stdout


def test_strip_controls_keeps_text_and_drops_sequences():
    from kubegpu.cli.render import literal, strip_controls

    assert strip_controls("a\x1b[31mred\x1b[0m\x1b]0;title\x07b\x00c\tok\n") == "aredbc\tok\n"
    assert literal("[bold]x[/]") == "\\[bold]x\\[/]"


# --- inputs without end, flags without bound ---------------------------------------------------

def test_nccl_on_dev_zero_ends():
    refused(run_inprocess("nccl", "/dev/zero"), "/dev/zero", "binary data")


@pytest.mark.parametrize("args", [["nccl", "{fifo}"], ["status", "--snapshot", "{fifo}"],
                                  ["simulate", "inflation", "--nodes", "{fifo}", "--pods", "{fifo}"]])
def test_a_fifo_that_never_closes_is_bounded_in_time(tmp_path, monkeypatch, args):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setenv("KUBEGPU_READ_TIMEOUT", "1")
    refused(run_inprocess(*[a.format(fifo=fifo) for a in args]), str(fifo), "no end of input after 1 s")


def test_a_fifo_with_a_writer_is_read(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE]})
    writer = threading.Thread(target=lambda: open(fifo, "w").write(text))
    writer.start()
    r = run_inprocess("status", "-o", "json", "--snapshot", str(fifo))
    writer.join(timeout=10)
    assert r.code == 0 and json.loads(r.stdout)["nodes"][0]["name"] == "gpu-1"


@pytest.mark.parametrize("flag", [["--tune", "1e12"], ["--tune", "-1"], ["--seeds", "1-1000000000000"],
                                  ["--seeds", "5-1"], ["--workers", "100000"]])
def test_simulate_numeric_flags_have_ranges(tmp_path, flag):
    refused(run_inprocess("simulate", "inflation", "--nodes", "n.csv", "--pods", "p.csv", *flag), flag[0])


def test_audit_param_of_the_wrong_type_is_refused(tmp_path):
    config = tmp_path / "audit.yaml"
    config.write_text("params:\n  KG-301:\n    min: soon\n")
    refused(run_inprocess("audit", "--demo", "--config", str(config)), "params.KG-301.min", "duration")


# --- third-party objects with surprising shapes ------------------------------------------------

GPU_POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
            "spec": {"template": {"spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count",
                                                               "operator": "Gt", "values": ["0"]}]}},
                     "disruption": "WhenEmpty"}}


@pytest.mark.parametrize("objects, field", [
    ([GPU_POOL], "NodePool/gpu: field spec.disruption"),
    ([dict(GPU_POOL, spec="x")], None),  # not readable as a GPU pool at all: a spec that is a string
    ([{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "r", "namespace": "m"},
       "spec": {"groups": "x"}}], "PrometheusRule/m/r: field spec.groups"),
], ids=["karpenter-disruption", "karpenter-spec", "prometheusrule-groups"])
def test_odd_crd_shapes_are_named_not_crashed(tmp_path, objects, field):
    r = run_inprocess("audit", "--snapshot", dump(tmp_path, NODE, *objects))
    if field is None:
        assert r.code in (0, 1, 2) and len(r.err_lines) <= 1 and "internal error" not in r.stderr
    else:
        refused(r, field)


def test_volcano_job_whose_spec_is_a_string(tmp_path):
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vj", "namespace": "ml"},
           "spec": "a string"}
    member = pod("vj-w-0", "2")
    member["metadata"]["labels"] = {"volcano.sh/job-name": "vj"}
    refused(run_inprocess("why", "--all", "--snapshot", dump(tmp_path, NODE, job, member)), "Job/ml/vj: field spec")


def test_defrag_count_is_bounded_by_the_cluster_not_the_flag():
    """`--count 10000` on an 80-GPU cluster plans at most what the devices hold (unmet beyond), quickly."""
    r = run_inprocess("defrag", "--demo", "--size", "8", "--count", "10000", "-o", "json")
    assert r.code == 1, r.stderr
    assert json.loads(r.stdout)["feasible"] is False
    refused(run_inprocess("defrag", "--demo", "--size", "8", "--count", "1000000000"), "--count")
