"""FailedScheduling message format (framework/types.go FitError.Error) and parsing real events."""

from pathlib import Path

import pytest

from kubegpu.scheduling.message import classify_reason, fit_error_message, histogram, parse_event_message
from kubegpu.scheduling.versions import KubeVersion

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "k8s"  # beside the project
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures/k8s not present")
V136 = KubeVersion.parse("v1.36.3")


def test_histogram_sorts_as_plain_strings_so_10_sorts_before_2():
    assert histogram({"b": 2, "a": 10, "c": 32, "d": 8}) == ["10 a", "2 b", "32 c", "8 d"]


def test_fit_error_joins_entries_and_ends_with_period():
    msg = fit_error_message(40, reason_counts={"node(s) had untolerated taint(s)": 32,
                                               "Insufficient nvidia.com/gpu": 8}, version=V136)
    assert msg == "0/40 nodes are available: 32 node(s) had untolerated taint(s), 8 Insufficient nvidia.com/gpu."


def test_prefilter_rejection_is_printed_once_without_counts():
    msg = fit_error_message(3, prefilter_message="pod has unbound immediate PersistentVolumeClaims",
                            postfilter_message="not found", version=V136)
    assert msg == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"


def test_prefilter_rejection_before_1_25_is_counted_on_every_node():
    msg = fit_error_message(3, prefilter_message="pod has unbound immediate PersistentVolumeClaims",
                            version=KubeVersion.parse("1.23"))
    assert msg == "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims."


def test_postfilter_gets_a_second_period_in_1_25_to_1_29():
    post = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    old = fit_error_message(1, reason_counts={"x": 1}, postfilter_message=post, version=KubeVersion.parse("1.28"))
    new = fit_error_message(1, reason_counts={"x": 1}, postfilter_message=post, version=KubeVersion.parse("1.30"))
    assert old.endswith("scheduling..") and new.endswith("scheduling.") and not new.endswith("..")


@pytest.mark.parametrize("version,expected", [
    ("1.36.0", "node(s) had untolerated taint(s)"),
    ("1.34.2", "node(s) had untolerated taint(s)"),
    ("1.34.1", "node(s) had untolerated taint {dedicated: gpu}"),
    ("1.28.4", "node(s) had untolerated taint {dedicated: gpu}"),
    ("1.20.0", "node(s) had taint {dedicated: gpu}, that the pod didn't tolerate"),
    ("1.16.0", "node(s) had taints that the pod didn't tolerate"),
])
def test_taint_reason_wording_by_version(version, expected):
    assert KubeVersion.parse(version).taint_reason("dedicated", "gpu") == expected


@needs_fixtures
def test_parse_fixture_gke_event():
    text = (FIXTURES / "events_failedscheduling_insufficient_gpu_gke.txt").read_text()
    msg = text[text.index("0/2 nodes"):].strip()
    parsed = parse_event_message(msg)
    assert parsed.total_nodes == 2
    assert [(r.count, r.reason) for r in parsed.reasons] == [
        (1, "Insufficient cpu"), (1, "Insufficient nvidia.com/gpu"), (2, "Insufficient memory")]
    assert {r.plugin for r in parsed.reasons} == {"NodeResourcesFit"}


@needs_fixtures
def test_parse_fixture_6_nodes():
    text = (FIXTURES / "events_failedscheduling_6_nodes_insufficient_gpu.txt").read_text()
    parsed = parse_event_message(text[text.index("0/6 nodes"):].strip())
    assert parsed.total_nodes == 6 and parsed.reasons[0].reason == "Insufficient nvidia.com/gpu"
    assert parsed.preemption is None


@needs_fixtures
def test_parse_fixture_aks_taint_and_double_period_preemption():
    lines = [ln for ln in (FIXTURES / "describe_pod_vllm_aks_gpu_spot_autoscaler.txt").read_text().splitlines()
             if "FailedScheduling" in ln]
    parsed = parse_event_message(lines[1][lines[1].index("0/3"):])
    assert parsed.total_nodes == 3
    assert parsed.reasons[0].reason == "node(s) had untolerated taint {node.kubernetes.io/network-unavailable: }"
    assert parsed.reasons[0].plugin == "TaintToleration"
    assert [(r.count, r.reason) for r in parsed.preemption.reasons] == [
        (1, "Preemption is not helpful for scheduling"), (2, "No preemption victims found for incoming pod")]
    assert any("1.25 to 1.29" in h for h in parsed.version_hints)


def test_parse_dra_prefix_and_prefilter_form():
    parsed = parse_event_message(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to "
        "deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No "
        "preemption victims found for incoming pod.")
    assert [r.count for r in parsed.reasons] == [1, 2] and parsed.preemption.total_nodes == 3
    pre = parse_event_message("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found")
    assert pre.prefilter == "pod has unbound immediate PersistentVolumeClaims" and pre.postfilter_other == ["not found"]


def test_parse_roundtrips_what_we_write():
    counts = {"node(s) didn't match Pod's node affinity/selector": 36, "Insufficient nvidia.com/gpu": 4}
    msg = fit_error_message(40, reason_counts=counts, version=V136)
    parsed = parse_event_message(msg)
    assert {r.reason: r.count for r in parsed.reasons} == counts


def test_parse_truncated_note():
    parsed = parse_event_message("0/300 nodes are available: 10 Insufficient cpu, 290 node(s) had untolerated ...")
    assert parsed.truncated and parsed.total_nodes == 300


def test_classify_old_wordings():
    assert classify_reason("node(s) had taints that the pod didn't tolerate")[0] == "TaintToleration"
    assert classify_reason("node(s) didn't match node selector")[0] == "NodeAffinity"
    assert classify_reason("node(s) had volume node affinity conflict")[0] == "VolumeBinding"
