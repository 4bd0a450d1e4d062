"""Every line signature, in the spellings real NCCL and PyTorch versions print, yields exactly
the expected finding; near-misses yield none. Lines are taken from (or modelled on) public
issue logs: NVIDIA/nccl, nccl-tests, pytorch, aws-ofi-nccl."""

from __future__ import annotations

import pytest

from kubegpu.nccl import analyze_files
from kubegpu.nccl.signatures import BY_ID, LINE_SIGNATURES, SIGNATURES

# (expected finding id, one log line)
POSITIVE: list[tuple[str, str]] = [
    ("libibverbs-missing", "ip-172-31-0-137:14605:14673 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"),
    ("libibverbs-missing", "node1:77:88 [2] misc/ibvsymbols.cc:20 NCCL WARN Failed to open libibverbs.so.1"),
    ("rdma-provider-missing", "libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so': libmlx5-rdmav34.so: "
                              "cannot open shared object file: No such file or directory"),
    ("no-ib-device", "ip-172-31-12-21:45361:45361 [0] NCCL INFO NET/IB : No device found."),
    ("network-not-found", "gpu-0:100:100 [0] init.cc:123 NCCL WARN Error: network IB not found."),
    ("net-plugin-failed", "[1,0]<stdout>:bert-worker-0:21:570 [0] nccl_net_ofi_create_plugin:257 NCCL WARN NET/OFI "
                          "aws-ofi-nccl initialization failed"),
    ("ib-disabled-by-env", "axa:3048391:3048566 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1."),
    ("p2p-disabled-by-env", "w-1:12:40 [3] NCCL INFO NCCL_P2P_DISABLE set by environment to 1."),
    ("shm-disabled-by-env", "w-1:12:40 [3] NCCL INFO NCCL_SHM_DISABLE set by environment to 1."),
    ("socket-interface-not-found", "gpu-2:99:99 [0] bootstrap.cc:236 NCCL WARN Bootstrap : no socket interface found"),
    ("socket-interface-not-found", "node:1:1 [0] NCCL WARN NET/Socket : no interface found"),
    ("socket-interface-not-found", "Bootstrap: no socket interface found"),
    ("bootstrap-mismatch", "host:12:34 [0] bootstrap.cc:77 NCCL WARN Message truncated : received 172 bytes instead of 64"),
    ("bootstrap-mismatch", "user:695835:695835 [4] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3"),
    ("bootstrap-mismatch", "host:1:2 [0] bootstrap.cc:140 NCCL WARN Bootstrap Root : mismatch in rank count from procs 8 : 16"),
    ("connection-refused", "w0:9:9 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused"),
    ("connection-refused", "w0:9:9 [0] os/linux.cc:280 NCCL WARN socketStartConnect: connect to 10.0.0.2<45763> returned "
                           "Connection refused, exceeded error retry count after 35 attempts"),
    ("connection-refused", "*server name* [0] include/socket.h:185 WARN Call to connect failed : Connection refused"),
    ("connection-timed-out", "w0:9:9 [0] misc/socket.cc:480 NCCL WARN Net : Connect to 10.1.2.3<1234> failed : Connection timed out"),
    ("peer-unreachable", "w0:9:9 [0] misc/socket.cc:456 NCCL WARN socketStartConnect: Connect to 10.0.0.9<4000> failed : No route to host"),
    ("peer-unreachable", "w0:9:9 [0] misc/socket.cc:456 NCCL WARN Connect to fe80::1%veth1<4000> failed : Network is unreachable"),
    ("connect-retrying", "w0:9:9 [0] NCCL INFO Call to connect returned Connection refused, retrying"),
    ("connect-retrying", "w0:9:9 [0] NCCL INFO socketStartConnect: connect to 10.0.0.2<45763> returned Connection timed out, "
                         "retrying (3/34) after sleep for 300 msec"),
    ("peer-closed", "[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer 10.10.1.3<36138>"),
    ("peer-closed", "w0:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : "
                    "Software caused connection abort"),
    ("peer-closed", "w:202016:202238 [2] proxy.cc:1326 NCCL WARN Socket recv failed while polling for opId=0x7f"),
    ("peer-closed", "h:1:2 [0] misc/socket.cc:50 NCCL WARN Net : Recv failed : Connection reset by peer"),
    ("ib-memlock", "n1:5:6 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory"),
    ("ib-qp-setup-failed", "n1:5:6 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable"),
    ("ib-completion-error", "h:984:1200 [4] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.5<55921> "
                            "with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:29.87.4.221"),
    ("ib-completion-error", "h:1:2 [0] NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129"),
    ("shm-exhausted", "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"),
    ("shm-exhausted", "[2026-04-22 21:34:20] runner:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
                      "/dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)"),
    ("shm-exhausted", "ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
                      "/dev/shm/nccl-KWfVyt (size 5967872)"),
    ("duplicate-gpu", "[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and "
                      "rank 0 both on CUDA device 1000"),
    ("duplicate-gpu", "Duplicate GPU detected : rank 3 and rank 0 both on CUDA device f000"),
    ("cuda-failure", "[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'"),
    ("cuda-failure", "h:1:1 [0] enqueue.cc:100 NCCL WARN Cuda failure 2 'out of memory'"),
    ("rendezvous-unreachable", "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying "
                               "to connect to (10.0.0.1, 29500)."),
    ("rendezvous-unreachable", "[W socket.cpp:601] [c10d] The client socket has failed to connect to [master-0]:29500 "
                               "(errno: 111 - Connection refused)."),
    ("rendezvous-dns", "[W socket.cpp:464] [c10d] The IPv6 network addresses of (job-master-0, 29500) cannot be retrieved "
                       "(gai error: -2 - Name or service not known)."),
    ("collective-timeout", "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=8, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                           "1800596 milliseconds before timing out."),
    ("collective-timeout", "[E ProcessGroupNCCL.cpp:587] [Rank 1] Watchdog caught collective operation timeout: "
                           "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1806948 milliseconds before timing out."),
    ("watchdog-progress", "[rank3]:[E321 02:07:08.465 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error "
                          "or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed "
                          "NCCL work: 1579."),
    ("watchdog-hang", "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be "
                      "terminated after dumping debug info. workMetaList_.size()=103"),
    ("watchdog-hang", "[rank6]:[E429 13:55:49.384 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] "
                      "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress"),
    ("nccl-error", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1201, unhandled "
                   "system error, NCCL version 2.14.3"),
    ("nccl-error", "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."),
    ("nccl-error", "NCCL failure *MyProgram*.cu:110 'unhandled system error'"),
]

# Lines that look close but must produce no finding at all.
NEGATIVE: list[str] = [
    "testgpu2:3255:3262 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 0.",
    "w-1:12:40 [3] NCCL INFO NCCL_P2P_DISABLE set by environment to 0.",
    "testgpu2:3255:3255 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
    "hostname1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB primaryip:10.10.10.10<0>",
    "node:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.140.0.12<0>",
    "epoch 3 step 100 loss 0.123 (connection to wandb refused? no)",
    "INFO worker socket connected in 3 s",
    "g148:14937:69361 [0] NCCL INFO Channel 01/1 : 0[0] -> 8[0] [send] via NET/IB/9/GDRDMA/Shared",
    "wandb: Network error (ConnectionError), entering retry loop. ('Connection aborted.', "
    "ConnectionResetError(104, 'Connection reset by peer'))",
    "curl: (7) Failed to connect to mirror.example.com port 443: Connection refused",
]


def _ids_for(tmp_path, line: str) -> set[str]:
    log = tmp_path / "one.log"
    log.write_text(line + "\n", encoding="utf-8")
    report = analyze_files([str(log)])
    # Derived findings about missing debug output are about the whole log, not this line.
    return {f.id for f in report.findings} - {"no-nccl-output"}


@pytest.mark.parametrize(("expected", "line"), POSITIVE, ids=[f"{i}-{n}" for n, (i, _) in enumerate(POSITIVE)])
def test_each_spelling_yields_exactly_its_finding(tmp_path, expected, line):
    assert _ids_for(tmp_path, line) == {expected}


@pytest.mark.parametrize("line", NEGATIVE)
def test_near_misses_yield_nothing(tmp_path, line):
    assert _ids_for(tmp_path, line) == set()


def test_every_line_signature_has_a_positive_example():
    covered = {i for i, _ in POSITIVE}
    assert {s.id for s in LINE_SIGNATURES} <= covered


def test_catalog_is_well_formed():
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))
    for sig in SIGNATURES:
        assert sig.severity in ("info", "warn", "error")
        assert sig.cause.endswith(".") and sig.fix.endswith(".") or sig.fix.endswith(")."), sig.id
        if sig.pattern is not None:
            assert sig.needles, f"{sig.id} has a regex but no needle to reach it"
    assert BY_ID["collective-timeout"].severity == "error"


def test_unknown_nccl_warn_is_reported_generically(tmp_path):
    log = tmp_path / "w.log"
    log.write_text("n1:5:6 [0] transport/p2p.cc:200 NCCL WARN Something new went wrong: code 77\n")
    report = analyze_files([str(log)])
    (finding,) = [f for f in report.findings if f.id == "nccl-warn"]
    assert "Something new went wrong: code 77" in finding.message
    assert report.first_warn is not None and report.first_warn.line == 1


def test_finding_aggregates_count_ranks_and_caps_evidence(tmp_path):
    lines = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(SeqNum=9, OpType=ALLGATHER, NumelIn=1, NumelOut=8, Timeout(ms)=600000) ran for 600100 "
             f"milliseconds before timing out." for r in range(6)]
    log = tmp_path / "t.log"
    log.write_text("\n".join(lines) + "\n")
    (finding,) = [f for f in analyze_files([str(log)]).findings if f.id == "collective-timeout"]
    assert finding.count == 6
    assert finding.ranks == [0, 1, 2, 3, 4, 5]
    assert len(finding.evidence) == 3 and [e.line for e in finding.evidence] == [1, 2, 3]
    assert "ALLGATHER (SeqNum 9)" in finding.message and "Timeout(ms)=600000" in finding.message


def test_root_cause_outranks_wrapper_in_verdict(tmp_path):
    log = tmp_path / "f.log"
    log.write_text(
        "w0:9:9 [0] misc/socket.cc:480 NCCL WARN Net : Connect to 10.1.2.3<1234> failed : Connection refused\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1201, unhandled system error, NCCL version 2.14.3\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n")
    report = analyze_files([str(log)])
    assert [f.id for f in report.findings] == ["connection-refused", "nccl-error"]
    assert report.status == "failed"
    assert report.verdict.startswith("Failed: connection refused by a peer: connect to 10.1.2.3<1234> refused")
    assert "ncclSystemError" in report.findings[1].message
