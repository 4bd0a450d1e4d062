"""The three real logs saved from public issues (../shared/fixtures/nccl) are classified as a
human expert reads them: IB for nccl-tests #182, Socket with missing libibverbs and a veth
interface for pytorch #68893, a collective timeout for LlamaFactory #7396."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.nccl import analyze_files

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "nccl"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"shared NCCL fixtures not found at {FIXTURES}")


def _report(name: str):
    return analyze_files([str(FIXTURES / name)])


def test_nccl_tests_182_is_a_healthy_ib_run():
    report = _report("ib_success_nccl-tests-182.log")
    assert report.transport == "IB"
    assert report.gdr is None  # the excerpt has no channel lines: GDR is not shown either way
    assert report.findings == []
    assert report.status == "healthy"
    assert report.networks == ["IB"]
    assert [(h.name, h.port, h.link) for h in report.hcas] == [("mlx5_0", 1, "IB")]
    assert report.nccl_version == "2.19.3+cuda12.3"
    assert report.hosts == ["testgpu1", "testgpu2"]
    assert report.env["NCCL_IB_HCA"] == "mlx5_0"
    (iface,) = report.interfaces
    assert (iface.name, iface.kind, iface.roles) == ("ibs65", "infiniband", ["bootstrap", "oob"])
    assert report.verdict.startswith("Healthy: NCCL 2.19.3+cuda12.3 used IB over mlx5_0:1")


def test_pytorch_68893_is_a_socket_fallback_over_a_veth():
    report = _report("socket_fallback_pytorch-68893.log")
    assert report.transport == "Socket"
    assert report.gdr is False
    assert [f.id for f in report.findings] == ["libibverbs-missing", "virtual-interface", "socket-transport"]
    assert {f.severity for f in report.findings} == {"warn"}
    libibverbs, veth, _socket = report.findings
    assert libibverbs.evidence[0].line == 5 and "Failed to open libibverbs.so[.1]" in libibverbs.evidence[0].text
    assert "veth75fa783" in veth.message
    assert "NCCL_SOCKET_IFNAME=ens5" in veth.fix
    kinds = {i.name: i.kind for i in report.interfaces}
    assert kinds == {"ens5": "physical", "veth75fa783": "virtual"}
    assert report.paths == ["NET/Socket"]
    assert report.nccl_version == "2.7.8+cuda11.1"
    assert report.status == "degraded"
    assert "libibverbs" in report.verdict and "veth75fa783 (virtual)" in report.verdict


def test_llamafactory_7396_is_a_collective_timeout():
    report = _report("watchdog_timeout_llamafactory-7396.log")
    assert report.transport == "unknown"
    assert report.status == "failed"
    top = report.findings[0]
    assert top.id == "collective-timeout" and top.severity == "error"
    assert top.count == 2 and top.ranks == [0, 4]
    assert "ALLREDUCE (SeqNum 1580)" in top.message and "Timeout(ms)=600000" in top.message
    assert {f.id for f in report.findings} == {"collective-timeout", "watchdog-progress", "no-nccl-output"}
    assert report.verdict.startswith("Failed: collective timeout")


def test_all_three_together_are_one_mixed_story():
    report = analyze_files([str(p) for p in sorted(FIXTURES.glob("*.log"))])
    assert report.transport == "mixed"  # IB on the testgpu hosts, Socket on ip-172-31-0-137
    ids = [f.id for f in report.findings]
    assert ids[0] == "transport-mismatch"
    assert "collective-timeout" in ids and "libibverbs-missing" in ids
    assert len(report.files) == 3 and [f.lines for f in report.files] == [16, 15, 4]
