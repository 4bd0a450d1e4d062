"""Which transport NCCL used and whether GPUDirect RDMA carried the data, across NCCL versions,
plugins and failure shapes."""

from __future__ import annotations

from kubegpu.nccl import analyze_files


def _run(tmp_path, text: str, name: str = "r.log"):
    log = tmp_path / name
    log.write_text(text)
    return analyze_files([str(log)])


def test_roce_link_layer_is_reported_as_roce_and_hca_level_gdr_is_not_proof(tmp_path):
    report = _run(tmp_path,
                  "h1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB bond0:10.10.10.10<0>\n"
                  "h1:25668:27396 [0] NCCL INFO Using network IB\n"
                  "h1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n")
    assert report.transport == "RoCE"
    assert report.gdr is None and "supports" in report.gdr_basis
    assert [h.link for h in report.hcas] == ["RoCE", "RoCE"]
    assert report.findings == []


def test_gdr_disabled_on_ib_is_a_warning(tmp_path):
    report = _run(tmp_path,
                  "h1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE; OOB eth0:10.0.0.1<0>\n"
                  "h1:1:2 [0] NCCL INFO Using network IB\n"
                  "h1:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
                  "h1:1:3 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n")
    assert (report.transport, report.gdr) == ("RoCE", False)
    assert [f.id for f in report.findings] == ["gdr-disabled"]
    assert report.status == "degraded"


def test_per_gpu_gdr_line_decides_when_there_are_no_channels(tmp_path):
    report = _run(tmp_path,
                  "n:1:1 [0] NCCL INFO Using network IB\n"
                  "n:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)\n")
    assert report.gdr is False


def test_hpcx_sharp_plugin_ibext_counts_as_ib_with_plugin_named(tmp_path):
    report = _run(tmp_path,
                  "q:49355:49414 [1] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n"
                  "q:49355:49414 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP [RO]; OOB ibp25s0:10.20.0.119<0>\n"
                  "q:49355:49414 [1] NCCL INFO Using network IBext\n"
                  "q:49355:49414 [1] NCCL INFO Channel 00/0 : 1[1] -> 9[1] [send] via NET/IBext/0/GDRDMA\n")
    assert (report.transport, report.gdr) == ("IB", True)
    assert report.plugin == "NCCL RDMA Plugin v6"
    assert report.hcas[0].extra == "SHARP"
    assert report.paths == ["NET/IBext/GDRDMA"]


def test_aws_libfabric_plugin_is_its_own_transport(tmp_path):
    report = _run(tmp_path,
                  "algo-1:18568:18640 [6] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws\n"
                  "algo-1:18562:18635 [0] NCCL INFO Using network AWS Libfabric\n"
                  "algo-1:18562:18635 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA\n")
    assert report.transport == "AWS Libfabric"
    assert report.gdr is True
    assert report.plugin == "aws-ofi-nccl 1.11.0-aws"
    assert "net plugin" in report.verdict


def test_failed_ofi_plugin_then_socket_fallback(tmp_path):
    report = _run(tmp_path,
                  "[1,0]<stdout>:w-0:21:570 [0] nccl_net_ofi_create_plugin:257 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
                  "[1,0]<stdout>:w-0:21:570 [0] NCCL INFO NET/IB : No device found.\n"
                  "[1,0]<stdout>:w-0:21:570 [0] NCCL INFO NET/Socket : Using [0]eth0:192.168.29.226<0>\n"
                  "[1,0]<stdout>:w-0:21:570 [0] NCCL INFO Using network Socket\n")
    assert report.transport == "Socket"
    assert [f.id for f in report.findings] == ["net-plugin-failed", "no-ib-device", "socket-transport"]
    assert report.ranks == [0]


def test_old_nccl_without_using_network_line(tmp_path):
    ib = _run(tmp_path, "x:16090:16180 [0] NCCL INFO NET/Socket : Using [0]enp41s0f1:<0> [1]virbr0:<0>\n"
                        "x:16090:16180 [0] NCCL INFO NET/IB : Using [0]hfi1_0:1/IB [1]hfi1_1:1/IB ; OOB ib0:10.10.10.2<0>\n"
                        "NCCL version 2.5.6+cuda10.1\n", "ib.log")
    assert ib.transport == "IB"
    assert "virtual-interface" in {f.id for f in ib.findings}  # virbr0 in the socket list
    sock = _run(tmp_path, "ip-1:45361:45361 [0] NCCL INFO NET/IB : No device found.\n"
                          "ip-1:45305:45305 [0] NCCL INFO NET/Socket : Using [0]ens3:172.31.12.210<0>\n"
                          "ip-1:4:4 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via NET/Socket/0\n", "sock.log")
    assert (sock.transport, sock.gdr) == ("Socket", False)


def test_single_node_run_over_nvlink_is_healthy_even_with_lo(tmp_path):
    report = _run(tmp_path,
                  "ds:17754:17754 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n"
                  "ds:17754:17754 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
                  "ds:17754:17754 [0] NCCL INFO Using network Socket\n"
                  "ds:17754:17765 [0] NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/IPC/read\n"
                  "ds:17754:17765 [0] NCCL INFO Channel 01/02 : 0[0] -> 1[1] via SHM/direct/direct\n"
                  "ds:17754:17765 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
                  "ds:17754:17765 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 6000 - Init COMPLETE\n")
    assert report.findings == []
    assert report.status == "healthy"
    assert (report.nranks, report.nnodes) == (2, 1)
    assert report.paths == ["P2P/IPC", "SHM"]


def test_loopback_on_a_multi_node_run_is_called_out(tmp_path):
    report = _run(tmp_path,
                  "axa:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n"
                  "axa:1:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
                  "axa:1:2 [0] NCCL INFO Using network Socket\n"
                  "axa:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0\n")
    (veth,) = [f for f in report.findings if f.id == "virtual-interface"]
    assert "lo (loopback, socket)" in veth.message
    assert "^lo" in veth.fix  # no physical interface seen: suggest an exclusion list
    assert report.env == {"NCCL_SOCKET_IFNAME": "lo"}


def test_ranks_on_different_networks_is_an_error(tmp_path):
    a = tmp_path / "a.log"
    a.write_text("node-a:1:2 [0] NCCL INFO Using network IB\n")
    b = tmp_path / "b.log"
    b.write_text("node-b:1:2 [0] NCCL INFO Using network Socket\nNCCL version 2.18.1+cuda12.1\n"
                 "node-a:1:2 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n")
    report = analyze_files([str(a), str(b)])
    assert report.transport == "mixed"
    assert [f.id for f in report.findings] == ["transport-mismatch", "nccl-version-mismatch"]
    assert "node-a: IB; node-b: Socket" in report.findings[0].message
    assert report.nccl_versions == ["2.18.1+cuda12.1", "2.19.3+cuda12.3"]


def test_nothing_nccl_at_all(tmp_path):
    report = _run(tmp_path, "hello\nworld\n")
    assert report.transport == "unknown" and report.gdr is None
    assert [f.id for f in report.findings] == ["no-nccl-output"]
    assert report.status == "no-evidence"
    assert "NCCL_DEBUG=INFO" in report.verdict


def test_nccl_tests_bus_bandwidth_is_reported(tmp_path):
    report = _run(tmp_path,
                  "#  Rank  0 Group  0 Pid  17754 on ds-ml-01-0 device  0 [0x06] Tesla V100-SXM2-32GB\n"
                  "#  Rank  1 Group  0 Pid  17755 on ds-ml-01-1 device  0 [0x07] Tesla V100-SXM2-32GB\n"
                  "ds-ml-01-0:17754:17754 [0] NCCL INFO Using network IB\n"
                  "# Avg bus bandwidth    : 33.3227 \n")
    assert report.bus_bandwidth_gbps == 33.3227
    assert report.ranks == [0, 1] and report.hosts == ["ds-ml-01-0", "ds-ml-01-1"]
