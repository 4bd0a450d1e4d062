"""Issue 23: numbers Python will not parse or columns cannot hold are one line (exit 2), never exit 3.

Integers of thousands of digits hit the interpreter's 4300-digit limit; GPU requests such as
`1Ei` overflow the placement columns; a trace without GPU demand never reaches tune x capacity.
"""

from __future__ import annotations

import json

import pytest

from kubegpu.errors import InputError
from kubegpu.model.integers import int_or_none, parse_int

from inprocess import run_inprocess
from .test_inputs import NODE, dump, pod, refused

HUGE = "9" * 5000  # beyond sys.get_int_max_str_digits() (4300)
NODE_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,8,V100M32\nn2,96000,786432,8,V100M32\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


def test_one_integer_reader_bounds_the_text_before_converting_it():
    with pytest.raises(InputError, match=r"f\.log:3: field rank: .*5000 characters.*too long"):
        parse_int(HUGE, where="f.log:3", field="rank")
    with pytest.raises(InputError, match="out of range"):
        parse_int("9223372036854775808")
    for text in ("١٢", "1_000", "0x10", "1e3", "", "+"):
        with pytest.raises(InputError, match="expected an integer"):
            parse_int(text)
    assert parse_int(" -12 ") == -12 and parse_int("9223372036854775807") == 2**63 - 1
    assert [int_or_none(t) for t in (HUGE, "²", "7", "7\n")] == [None, None, 7, None]  # upstream ParseInt


# --- NCCL logs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, line", [
    ("rank", "host1:12:34 [0] NCCL INFO comm 0x1 rank {n} nranks 8 cudaDev 0 busId 1000 - Init COMPLETE"),
    ("nranks", "host1:12:34 [0] NCCL INFO comm 0x1 rank 0 nranks {n} cudaDev 0 busId 1000 - Init COMPLETE"),
    ("pid", "host1:{n}:34 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"),
    ("port", "host1:12:34 [0] NCCL INFO NET/IB : Using [0]mlx5_0:{n}/IB ; OOB eth0:10.0.0.1<0>"),
    ("rank", "[rank{n}]: host1:12:34 [0] NCCL WARN NET/IB : Got async event : port error"),
])
def test_nccl_log_number_of_thousands_of_digits_names_file_line_and_field(tmp_path, field, line):
    log = tmp_path / "train.log"
    log.write_text("NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n" + line.format(n=HUGE) + "\n")
    refused(run_inprocess("nccl", str(log)), f"{log}:2: field {field}:", "too long for an integer")


# --- CSV traces ------------------------------------------------------------------------------------

@pytest.mark.parametrize("row, field, says", [
    (f"p1,1000,{HUGE},1,1000", "memory_mib", "too long for an integer"),
    ("p1,1000,1e30,1,1000", "memory_mib", "expected an integer"),
    ("p1,1000,9007199254740993,1,1000", "memory_mib", "out of range"),  # MiB -> bytes beyond int64
    ("p1,99999999999999999999,10,1,1000", "cpu_milli", "out of range"),
])
def test_pod_list_numbers_beyond_int64_name_line_and_column(tmp_path, row, field, says):
    pods = tmp_path / "pods.csv"
    pods.write_text(POD_HEADER + row + "\n")
    (tmp_path / "nodes.csv").write_text(NODE_CSV)
    r = run_inprocess("simulate", "inflation", "--nodes", str(tmp_path / "nodes.csv"), "--pods", str(pods),
                      "--seeds", "1")
    refused(r, f"{pods}:2: field {field}:", says)
    assert len(r.stderr) < 300  # the digits are not echoed back


def test_node_list_memory_beyond_int64_bytes(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODE_CSV.replace("786432", HUGE, 1))
    (tmp_path / "pods.csv").write_text(POD_HEADER + "p1,1000,1024,1,1000\n")
    refused(run_inprocess("simulate", "inflation", "--nodes", str(tmp_path / "nodes.csv"),
                          "--pods", str(tmp_path / "pods.csv")), "nodes.csv:2: field memory_mib")


def test_kubegpu_trace_numbers(tmp_path):
    from kubegpu.simulate.trace_format import load_trace

    trace = tmp_path / "jobs.csv"
    trace.write_text(f"submit,duration,gpus,pods\n0,1h,1,{HUGE}\n")
    with pytest.raises(InputError, match=r"jobs\.csv:2: field pods: .*too long"):
        load_trace(trace, classes={})
    trace.write_text(f"submit,duration,gpus,work_gpu_seconds\n0,,1,{HUGE}\n")  # a float: 1e4999 is inf
    with pytest.raises(InputError, match=r"jobs\.csv:2: field work_gpu_seconds: .*not a finite number"):
        load_trace(trace, classes={})


def test_mix_file_counts_the_columns_cannot_hold(tmp_path):
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps([{"cpu_milli": 1000, "num_gpu": 10**14, "gpu_milli": 1000}]))
    refused(run_inprocess("frag", "--demo", "--mix", str(mix)), "mix.json", "num_gpu")
    mix.write_text(json.dumps([{"cpu_milli": 1000, "num_gpu": 1, "gpu_milli": 1000, "memory_mib": 2**62}]))
    refused(run_inprocess("frag", "--demo", "--mix", str(mix)), "mix.json", "memory_mib")


def test_k8s_version_of_thousands_of_digits(tmp_path):
    r = run_inprocess("why", "--all", "--demo", "--k8s-version", f"v1.{HUGE}")
    refused(r, "not a Kubernetes version")
    assert len(r.stderr) < 300
    refused(run_inprocess("why", "--all", "--demo", "--k8s-version", "v١.٣٤"), "not a Kubernetes version")


# --- cluster text holding huge numbers: ignored as upstream ignores it -----------------------------

def test_huge_numbers_in_labels_annotations_and_events_are_ignored_like_upstream(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["metadata"]["labels"] = {"gpu-gen": HUGE}
    p = pod("w-0", "1")
    p["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-name": "g", "kueue.x-k8s.io/pod-group-total-count": HUGE}
    p["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": "g"}
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-gen", "operator": "Gt", "values": ["3"]}]}]}}}
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ml"},
             "involvedObject": {"kind": "Pod", "name": "w-0", "namespace": "ml"}, "reason": "FailedScheduling",
             "type": "Warning", "message": f"0/{HUGE} nodes are available: {HUGE} Insufficient nvidia.com/gpu."}
    path = dump(tmp_path, node, p, event)
    for args in (["why", "--all", "-o", "json"], ["audit"], ["doctor"]):
        r = run_inprocess(*args, "--snapshot", path)
        assert r.code in (0, 1), r.stderr
    report = json.loads(run_inprocess("why", "--all", "-o", "json", "--snapshot", path).stdout)[0]
    assert report["schedulable"] is False  # a label that is not an int64 never satisfies Gt (upstream)


# --- GPU requests the columns cannot hold ----------------------------------------------------------

@pytest.mark.parametrize("gpus", ["1Ei", "9e18", "1e15", "1048577"])
@pytest.mark.parametrize("args", [["frag"], ["defrag", "--size", "2"], ["audit"], ["doctor"], ["why", "--all"],
                                  ["status"]])
def test_a_pod_asking_absurd_gpus_is_refused_alike_by_every_command(tmp_path, gpus, args):
    path = dump(tmp_path, NODE, pod("big", gpus, node="gpu-1"), pod("small", "1"))
    refused(run_inprocess(*args, "--snapshot", path),
            "Pod/ml/big: field spec.containers[0].resources.limits.nvidia.com/gpu", "at most 1048576 per pod")


def test_gpu_units_summed_over_containers_are_bounded_and_memory_sums_stay_in_int64(tmp_path):
    p = pod("two", "1048576")
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {"nvidia.com/gpu": "1"}}})
    refused(run_inprocess("frag", "--snapshot", dump(tmp_path, NODE, p)),
            "Pod/ml/two: field spec.containers[*].resources.requests.nvidia.com/gpu")
    p = pod("mem", "1")
    p["spec"]["containers"] = [{"name": n, "resources": {"requests": {"memory": "7Ei"}}} for n in "ab"]
    refused(run_inprocess("frag", "--snapshot", dump(tmp_path, NODE, p)), "Pod/ml/mem", "memory", "2^63-1")


# --- simulate inflation: resampling that cannot end -----------------------------------------------

@pytest.mark.parametrize("pods, nodes, says", [
    ("p1,1000,1024,0,0\np2,2000,2048,0,0\n", NODE_CSV, "pods.csv: no pod asks for a GPU"),
    ("g,1000,1024,1,1\n" + "c,1000,1024,0,0\n" * 50, NODE_CSV, "pods.csv: its pods ask so little GPU"),
    ("p1,1000,1024,1,1000\n", NODE_CSV.replace(",8,", ",0,"), "nodes.csv: no node has a GPU"),
], ids=["cpu-only", "almost-no-gpu", "no-gpu-nodes"])
def test_inflation_that_could_not_end_is_refused_up_front(tmp_path, pods, nodes, says):
    (tmp_path / "pods.csv").write_text(POD_HEADER + pods)
    (tmp_path / "nodes.csv").write_text(nodes)
    refused(run_inprocess("simulate", "inflation", "--nodes", str(tmp_path / "nodes.csv"),
                          "--pods", str(tmp_path / "pods.csv"), "--seeds", "1"), says)


@pytest.mark.parametrize("seeds", [f"1-{HUGE}", HUGE, "١-٣"])
def test_seeds_of_thousands_of_digits_are_a_usage_error(seeds):
    r = run_inprocess("simulate", "inflation", "--nodes", "n.csv", "--pods", "p.csv", "--seeds", seeds)
    refused(r, "--seeds", "expected numbers or ranges")
    assert len(r.stderr) < 300


def test_a_yaml_integer_of_thousands_of_digits_names_file_and_line(tmp_path):
    snap = tmp_path / "dep.yaml"
    snap.write_text(f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: ml}}\nspec:\n"
                    f"  replicas: {HUGE}\n")
    r = run_inprocess("audit", "--snapshot", str(snap))
    refused(r, "dep.yaml: line 5: integer", "too long")
    assert len(r.stderr) < 300
    config = tmp_path / "audit.yaml"
    config.write_text(f"params:\n  KG-303:\n    max: {HUGE}\n")
    refused(run_inprocess("audit", "--demo", "--config", str(config)), "audit.yaml: line 3: integer")


@pytest.mark.parametrize("value, says", [(HUGE, "a valid percent string"), ("abc", "a valid percent string"),
                                         ("x%", "a valid percent string"), ("²", "a valid percent string"),
                                         ("150%", "greater than 100%"), (-1, "greater than or equal to 0")])
@pytest.mark.parametrize("field", ["minAvailable", "maxUnavailable"])
def test_pdb_int_or_percent_is_checked_when_read_as_the_api_server_does(tmp_path, value, says, field):
    """upstream ValidatePositiveIntOrPercent + IsNotMoreThan100Percent; defrag computed budgets from it (exit 3)."""
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "ml"},
           "spec": {field: value, "selector": {"matchLabels": {"app": "x"}}}}
    running = pod("p", "1", node="gpu-1")
    running["metadata"]["labels"] = {"app": "x"}
    for args in (["defrag", "--size", "8"], ["status"]):
        r = run_inprocess(*args, "--snapshot", dump(tmp_path, NODE, pdb, running))
        refused(r, f"PodDisruptionBudget/ml/b: field spec.{field}", says)
        assert len(r.stderr) < 300


def test_huge_numbers_in_mig_resources_sysctls_and_gfd_labels_are_no_information(tmp_path):
    node = json.loads(json.dumps(NODE))
    node["metadata"]["labels"] = {"nvidia.com/gpu.count": HUGE}
    mig = json.loads(json.dumps(NODE))
    mig["metadata"]["name"] = "gpu-2"
    mig["status"]["allocatable"] = {"cpu": "8", "memory": "64Gi", f"nvidia.com/mig-{HUGE}g.10gb": "7"}
    p = pod("p", "1", node="gpu-1")
    p["spec"]["containers"][0]["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}]
    p["spec"]["securityContext"] = {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": f"{HUGE} 2"}]}
    path = dump(tmp_path, node, mig, p)
    for args in (["status"], ["audit"], ["doctor"], ["defrag", "--size", "8"], ["why", "--all"]):
        r = run_inprocess(*args, "--snapshot", path)
        assert r.code in (0, 1), (args, r.stderr)
