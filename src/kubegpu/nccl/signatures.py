"""The catalog of NCCL / PyTorch log signatures: what each means, why it happens, how to fix it.

This is the one place where log spellings live. Each `Signature` is data: a stable id, a
severity, a regex searched *inside* each normalised line (never anchored: launchers add
prefixes), the likely cause and the fix. Signatures whose `pattern` is None are *derived*
findings that `analyze` computes from facts (transport, interfaces, versions) rather than from
one line; they are listed here so that every finding's wording sits in one table.

Spellings cover NCCL 2.0 to 2.27+ and PyTorch ProcessGroupNCCL from 1.x to 2.x (sources:
NVIDIA/nccl src/misc/socket.cc, src/os/linux.cc, bootstrap.cc, graph/topo.cc, ibvwrap.cc,
shmutils.cc; issue logs in NVIDIA/nccl, nccl-tests, pytorch, aws-ofi-nccl).

`needles` are literal substrings, one of which must occur in a line before the regex is tried:
they keep a multi-gigabyte log cheap to scan (see `parse.NeedleIndex`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Severity = Literal["info", "warn", "error"]
SEVERITY_ORDER: dict[str, int] = {"info": 0, "warn": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Signature:
    """One kind of finding: how to recognise it (or None if derived), and what to tell the user."""

    id: str
    severity: Severity
    title: str
    cause: str
    fix: str
    needles: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    # Lower = closer to a root cause. The verdict names the most severe finding with the
    # lowest priority, so "connection refused" outranks the "unhandled system error" wrapper.
    priority: int = 50
    # str.format template over the regex's named groups (missing groups render as "?").
    summary: str = ""


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_CONNECT_FINAL = r"(?:[Cc]onnect(?:ion)? to (?P<peer>\S+) (?:failed\s*:\s*|returned )|Call to connect failed\s*:\s*)"

SIGNATURES: tuple[Signature, ...] = (
    # ------------------------------------------------------------ container image / devices
    Signature(
        id="libibverbs-missing", severity="warn", priority=20,
        title="libibverbs is missing from the image",
        needles=("libibverbs",),
        pattern=_rx(r"(?:Failed to open|Unable to open|cannot open)\s+libibverbs", re.I),
        cause="The container has no rdma-core/libibverbs, so NCCL cannot use InfiniBand or RoCE "
              "verbs and silently falls back to TCP sockets.",
        fix="Install rdma-core (libibverbs1 and ibverbs-providers) in the image or build on an "
            "NGC/HPC-X image; then expect 'Using network IB' in the log.",
    ),
    Signature(
        id="rdma-provider-missing", severity="warn", priority=21,
        title="libibverbs cannot load the RDMA provider driver",
        needles=("couldn't load driver",),
        pattern=_rx(r"couldn't load driver '(?P<driver>[^']+)'"),
        summary="libibverbs could not load {driver}",
        cause="libibverbs is present but its provider (e.g. libmlx5) is not, or does not match "
              "the host kernel's rdma-core ABI, so the HCA is unusable from the container.",
        fix="Install ibverbs-providers matching the host's MLNX_OFED/rdma-core in the image.",
    ),
    Signature(
        id="no-ib-device", severity="warn", priority=25,
        title="NCCL found no InfiniBand/RoCE device",
        needles=("No device found", "No IB devices found"),
        pattern=_rx(r"NET/IB\s*:\s*No (?:IB )?devices? found"),
        cause="No usable HCA is visible inside the container: /dev/infiniband is not mounted, the "
              "pod was given no RDMA resource, or NCCL_IB_HCA filters every device out "
              "(expected on clusters without InfiniBand/RoCE).",
        fix="Request an RDMA resource for the pod (e.g. rdma/rdma_shared_device_a from "
            "k8s-rdma-shared-dev-plugin, or an SR-IOV VF through Multus) and add the IPC_LOCK "
            "capability, or run with hostNetwork; check NCCL_IB_HCA.",
    ),
    Signature(
        id="network-not-found", severity="error", priority=4,
        title="the network forced by NCCL_NET is not available",
        needles=("not found",),
        pattern=_rx(r"Error: network (?P<net>.+?) not found"),
        summary="NCCL_NET asked for network {net}, which is not available",
        cause="NCCL_NET names a network (IB, Socket or a plugin) that NCCL could not initialise: "
              "the plugin library is missing or the devices it needs are absent.",
        fix="Mount/install the plugin or the RDMA devices it needs, or unset NCCL_NET.",
    ),
    Signature(
        id="net-plugin-failed", severity="warn", priority=22,
        title="the external net plugin failed to initialise",
        needles=("NET/OFI", "NET/Plugin"),
        pattern=_rx(r"NET/OFI (?P<what>aws-ofi-nccl initialization failed|Couldn't open a fabric[^.]*"
                    r"|Unable to find a protocol that worked|Failed to initialize[^.]*)"
                    r"|NET/Plugin\s*:\s*(?P<what2>Failed to load[^.]*|Plugin load returned \d+[^.]*undefined symbol[^.]*)"),
        summary="{what}{what2}",
        cause="The network plugin (aws-ofi-nccl for EFA/libfabric, or another libnccl-net.so) "
              "could not start, so NCCL falls back to its internal IB or Socket transport.",
        fix="Make the fabric visible to the pod (e.g. vpc.amazonaws.com/efa resources, "
            "/dev/infiniband), use a plugin built for this NCCL version, and set NCCL_NET to "
            "the plugin's network so a fallback fails loudly.",
    ),
    Signature(
        id="ib-disabled-by-env", severity="warn", priority=30,
        title="NCCL_IB_DISABLE=1 forces TCP sockets",
        needles=("NCCL_IB_DISABLE",),
        pattern=_rx(r"NCCL_IB_DISABLE set (?:by environment )?to\s*1\b"),
        cause="NCCL_IB_DISABLE=1 is a debugging setting that forbids InfiniBand/RoCE; it is often "
              "left in a spec after troubleshooting.",
        fix="Remove NCCL_IB_DISABLE from the pod spec unless the cluster truly has no RDMA fabric.",
    ),
    Signature(
        id="p2p-disabled-by-env", severity="warn", priority=40,
        title="NCCL_P2P_DISABLE=1 forbids NVLink/PCIe peer-to-peer",
        needles=("NCCL_P2P_DISABLE",),
        pattern=_rx(r"NCCL_P2P_DISABLE set (?:by environment )?to\s*1\b"),
        cause="NCCL_P2P_DISABLE=1 routes intra-node traffic through host memory instead of "
              "NVLink/PCIe P2P, a large slowdown usually left over from debugging.",
        fix="Remove NCCL_P2P_DISABLE; if P2P hangs, fix IOMMU/ACS settings on the node instead.",
    ),
    Signature(
        id="shm-disabled-by-env", severity="warn", priority=41,
        title="NCCL_SHM_DISABLE=1 forbids shared-memory transport",
        needles=("NCCL_SHM_DISABLE",),
        pattern=_rx(r"NCCL_SHM_DISABLE set (?:by environment )?to\s*1\b"),
        cause="NCCL_SHM_DISABLE=1 is usually a workaround for a too-small /dev/shm in the container.",
        fix="Mount an emptyDir with medium: Memory at /dev/shm and remove NCCL_SHM_DISABLE.",
    ),
    # ------------------------------------------------------------ interfaces / bootstrap
    Signature(
        id="socket-interface-not-found", severity="error", priority=5,
        title="no socket interface matches NCCL_SOCKET_IFNAME",
        needles=("nterface found",),
        pattern=_rx(r"(?:no socket interface found|NET/Socket\s*:\s*no interface found"
                    r"|No usable listening interface found|no NCCL_SOCKET_IFNAME interface found"
                    r"|no socket interface found for out-of-band)", re.I),
        cause="NCCL_SOCKET_IFNAME names an interface that does not exist (or is down) inside the "
              "pod, so NCCL cannot bootstrap; pod interfaces are usually eth0 (and net1.. with Multus).",
        fix="Set NCCL_SOCKET_IFNAME to an interface the pod really has (check `ip -br addr` in the "
            "pod), e.g. =eth0, or a prefix list like ^lo,docker.",
    ),
    Signature(
        id="bootstrap-mismatch", severity="error", priority=8,
        title="bootstrap mismatch between ranks",
        needles=("Message truncated", "mismatch in rank count", "wrong type"),
        pattern=_rx(r"Message truncated\s*:\s*received (?P<got>\d+) bytes instead of (?P<want>\d+)"
                    r"|Bootstrap Root\s*:\s*mismatch in rank count"
                    r"|socketFinalizeAccept(?: from \S+)?: wrong type (?P<t1>\d+) != (?P<t2>\d+)"),
        cause="Ranks disagree about the communicator: different NCCL versions across pods, two jobs "
              "sharing one MASTER_ADDR/port or NCCL_COMM_ID, a stale pod from an earlier attempt, "
              "or a wrong world size.",
        fix="Run every worker from the same image (same NCCL), give each job its own rendezvous "
            "port/ID, restart the whole gang so no stale pod remains, and check WORLD_SIZE.",
    ),
    # ------------------------------------------------------------ socket connect failures
    Signature(
        id="connection-refused", severity="error", priority=10,
        title="connection refused by a peer",
        needles=("Connection refused",),
        pattern=_rx(_CONNECT_FINAL + r"Connection refused(?!, retrying)"),
        summary="connect to {peer} refused",
        cause="Nothing listens on the peer's ephemeral port, or something rejects it: a "
              "NetworkPolicy or host firewall, NCCL bound to the wrong interface, or the peer "
              "process is not up (yet) or already died.",
        fix="Allow pod-to-pod traffic on all TCP ports between the job's pods (NCCL uses "
            "ephemeral ports, there is no NCCL_PORT_RANGE), set NCCL_SOCKET_IFNAME to the routable "
            "interface, and start the workers as a gang.",
    ),
    Signature(
        id="connection-timed-out", severity="error", priority=11,
        title="connection to a peer timed out",
        needles=("Connection timed out",),
        pattern=_rx(_CONNECT_FINAL + r"Connection timed out(?!, retrying)"),
        summary="connect to {peer} timed out",
        cause="Packets to the peer are silently dropped: a firewall or NetworkPolicy with a drop "
              "rule, or NCCL chose an interface whose address the peer cannot route to.",
        fix="Open TCP between the job's pods (test with `nc -zv <peer> <port>` from the pod) and "
            "set NCCL_SOCKET_IFNAME to the interface on the shared network.",
    ),
    Signature(
        id="peer-unreachable", severity="error", priority=11,
        title="peer unreachable (no route)",
        needles=("No route to host", "Network is unreachable"),
        pattern=_rx(_CONNECT_FINAL + r"(?P<err>No route to host|Network is unreachable)(?!, retrying)"),
        summary="connect to {peer}: {err}",
        cause="The address NCCL advertised is not routable from the peer: a link-local or "
              "overlay-only address (veth/docker/CNI), a missing route between subnets, or an "
              "IPv6/IPv4 family mix.",
        fix="Set NCCL_SOCKET_IFNAME to the interface on the network shared by all nodes, and "
            "NCCL_SOCKET_FAMILY=AF_INET if some nodes lack IPv6.",
    ),
    Signature(
        id="connect-retrying", severity="warn", priority=60,
        title="socket connect retried",
        needles=(", retrying",),
        pattern=_rx(r"(?:Call to (?:connect|accept) returned|connect to (?P<peer>\S+) returned) "
                    r"(?P<err>[A-Za-z ]+?), retrying"),
        summary="connect returned {err} and was retried",
        cause="NCCL retried a TCP connect (up to NCCL_SOCKET_RETRY_CNT times); harmless if the peer "
              "came up late, the first sign of a blocked port if the retries run out.",
        fix="If the run later fails, treat it as the final connect error; otherwise start workers "
            "closer together (gang scheduling).",
    ),
    Signature(
        id="peer-closed", severity="error", priority=15,
        title="a peer closed or reset the connection",
        needles=("closed by remote peer", "connection abort", "reset by peer", "recv failed",
                 "Call to recv from"),
        # "reset by peer" alone is common outside NCCL (HTTP clients), so it needs an NCCL WARN.
        pattern=_rx(r"Connection closed by remote peer|Software caused connection abort"
                    r"|NCCL WARN.*Connection reset by peer|Socket recv failed|Call to recv from \S+ failed"),
        cause="A peer rank died or its connection was torn down during setup or a collective; "
              "usually a consequence of another rank crashing (OOM-kill, exception, eviction) or "
              "of a firewall/conntrack reset.",
        fix="Read the other ranks' logs (and `kubectl describe pod` for OOMKilled/evictions) for "
            "the first failure; test reachability with nc between the pods.",
    ),
    # ------------------------------------------------------------ RDMA fabric failures
    Signature(
        id="ib-memlock", severity="error", priority=9,
        title="RDMA memory registration failed (locked-memory limit)",
        needles=("ibv_reg_mr", "Unable to register memory"),
        pattern=_rx(r"ibv_reg_mr\w* failed(?: with error)?\s*:?\s*(?P<err>[A-Za-z ]+)"
                    r"|NET/IB\s*:\s*Unable to register memory"),
        cause="The container's locked-memory limit (ulimit -l, often 64 KiB or 8 MiB) is too low "
              "to pin NCCL's buffers for RDMA.",
        fix="Give the container an unlimited memlock ulimit (container runtime default ulimits, or "
            "`ulimit -l unlimited` in the entrypoint) and add the IPC_LOCK capability.",
    ),
    Signature(
        id="ib-qp-setup-failed", severity="error", priority=11,
        title="RDMA queue-pair setup failed",
        needles=("ibv_modify_qp", "ibv_create_qp"),
        pattern=_rx(r"(?P<call>ibv_modify_qp|ibv_create_qp) failed with (?:error )?(?P<err>[^\n]+)"),
        summary="{call} failed with {err}",
        cause="The queue pair could not be brought up: on RoCE usually a wrong GID index, a missing "
              "IP on the RoCE interface, or a VLAN/route mismatch between nodes.",
        fix="Set NCCL_IB_GID_INDEX to the RoCEv2 GID (see `show_gids`, often 3), give the RoCE "
            "interface an address on the shared subnet, and check the VLAN on both ends.",
    ),
    Signature(
        id="ib-completion-error", severity="error", priority=12,
        title="InfiniBand work completion error",
        needles=("Got completion",),
        pattern=_rx(r"NET/IB\s*:\s*Got completion (?:from peer (?P<peer>\S+) )?with "
                    r"(?:error|status=)\s*(?P<status>\d+)"),
        summary="completion with status {status} from {peer}",
        cause="An IB send or receive failed; status 12 is a transport retry timeout (link flap, "
              "congestion, bad cable or port, or a dead peer), status 5 a flushed request after "
              "an earlier error.",
        fix="Check the fabric (ibstat, port error counters, RoCE PFC/ECN), drain flapping nodes; "
            "for status 12 raise NCCL_IB_TIMEOUT (e.g. 22) and NCCL_IB_RETRY_CNT.",
    ),
    # ------------------------------------------------------------ intra-node resources
    Signature(
        id="shm-exhausted", severity="error", priority=7,
        title="/dev/shm too small for NCCL",
        needles=("shared memory segment", "/dev/shm", "posix_fallocate", "allocate shared memory"),
        pattern=_rx(r"Error while (?:creating|attaching to) shared memory segment"
                    r"|failed to extend /dev/shm\S*"
                    r"|Call to posix_fallocate failed\s*:\s*No space left on device"
                    r"|Unable to allocate shared memory"),
        cause="NCCL's intra-node shared-memory buffers do not fit in the container's /dev/shm "
              "(64 MiB by default in Kubernetes and Docker).",
        fix="Mount an emptyDir with medium: Memory (and a sizeLimit such as 16Gi) at /dev/shm; "
            "NCCL_SHM_DISABLE=1 only as a slower last resort.",
    ),
    Signature(
        id="duplicate-gpu", severity="error", priority=6,
        title="two ranks on the same GPU",
        needles=("Duplicate GPU",),
        pattern=_rx(r"Duplicate GPU detected\s*:\s*rank (?P<a>\d+) and rank (?P<b>\d+) both on "
                    r"CUDA device (?P<dev>\w+)"),
        summary="ranks {a} and {b} both on CUDA device {dev}",
        cause="More processes than GPUs: --nproc_per_node exceeds the pod's nvidia.com/gpu, or "
              "every process uses device 0 because the code ignores LOCAL_RANK.",
        fix="Call torch.cuda.set_device(LOCAL_RANK) before init_process_group and make "
            "nproc_per_node equal the pod's nvidia.com/gpu limit.",
    ),
    Signature(
        id="cuda-failure", severity="error", priority=18,
        title="a CUDA call inside NCCL failed",
        needles=("Cuda failure",),
        pattern=_rx(r"Cuda failure (?:\d+ )?'(?P<msg>[^']+)'"),
        summary="CUDA error '{msg}'",
        cause="A CUDA call made by NCCL failed: out of GPU memory, a bad device ordinal, a driver/"
              "runtime mismatch, an uninitialised NVSwitch fabric, or a GPU that fell off the bus.",
        fix="Act on the quoted CUDA error: free memory for 'out of memory', fix CUDA_VISIBLE_DEVICES/"
            "LOCAL_RANK for 'invalid device ordinal', start nvidia-fabricmanager for 'system not "
            "yet initialized', check dmesg for Xid errors otherwise.",
    ),
    # ------------------------------------------------------------ PyTorch c10d
    Signature(
        id="rendezvous-unreachable", severity="error", priority=3,
        title="the torch rendezvous (TCPStore) is unreachable",
        needles=("client socket has", "DistNetworkError"),
        pattern=_rx(r"client socket has (?:timed out after (?P<secs>\d+)s while trying to connect"
                    r"|failed to connect) to (?P<addr>\S+(?: \d+\))?)"
                    r"|DistNetworkError: (?P<msg>.+)"),
        cause="Workers cannot reach MASTER_ADDR:MASTER_PORT: the rank-0 pod is not up yet, "
              "MASTER_ADDR does not resolve to it, or a NetworkPolicy blocks the port.",
        fix="Point MASTER_ADDR at the rank-0 pod through a headless Service (<pod>.<svc>), allow the "
            "rendezvous port (29500, or 29400 for c10d), and start the workers as a gang.",
    ),
    Signature(
        id="rendezvous-dns", severity="warn", priority=16,
        title="the rendezvous host name does not resolve",
        needles=("gai error",),
        pattern=_rx(r"network addresses of (?P<addr>\(?[^)]*\)?) cannot be retrieved \(gai error: (?P<err>[^)]*)\)"),
        summary="cannot resolve {addr} ({err})",
        cause="MASTER_ADDR is a name that does not resolve from this pod (not yet created, wrong "
              "namespace, or a Service without a selector/headless spec).",
        fix="Use a headless Service (clusterIP: None) with publishNotReadyAddresses: true and "
            "MASTER_ADDR=<pod>.<svc>.<ns>.svc.",
    ),
    Signature(
        id="collective-timeout", severity="error", priority=45,
        title="collective timeout (PyTorch watchdog)",
        needles=("Watchdog caught collective operation timeout",),
        pattern=_rx(r"Watchdog caught collective operation timeout: WorkNCCL\((?:SeqNum=(?P<seq>\d+),\s*)?"
                    r"OpType=(?P<op>\w+)[^)]*?Timeout\(ms\)=(?P<timeout>\d+)\)"
                    r"(?: ran for (?P<ran>\d+) milliseconds)?"),
        summary="{op} (SeqNum {seq}) ran {ran} ms, over Timeout(ms)={timeout}",
        cause="A collective did not finish within the process-group timeout: a rank hung, crashed "
              "or reached a different collective (desync), or the network stalled. Slow work on "
              "one rank (data preprocessing, evaluation, checkpoint saving) is a common cause.",
        fix="Find the rank that never reached the collective (earlier errors, OOMKilled pods; "
            "TORCH_NCCL_DUMP_ON_TIMEOUT=1 / TORCH_NCCL_DESYNC_DEBUG=1), fix it, and raise "
            "init_process_group(timeout=...) only if that work legitimately takes longer.",
    ),
    Signature(
        id="watchdog-progress", severity="info", priority=70,
        title="watchdog progress at failure",
        needles=("detected by watchdog at work",),
        pattern=_rx(r"detected by watchdog at work: (?P<work>\d+), last enqueued NCCL work: "
                    r"(?P<enq>-?\d+), last completed NCCL work: (?P<done>-?\d+)"),
        summary="failed at work {work}; last enqueued {enq}, last completed {done}",
        cause="Where each rank's process group stood when the watchdog fired; ranks whose last "
              "completed work differs point at the one that fell behind.",
        fix="Compare 'last completed NCCL work' across ranks; the lowest one is the straggler.",
    ),
    Signature(
        id="watchdog-hang", severity="error", priority=46,
        title="PyTorch NCCL watchdog stuck (heartbeat timeout)",
        needles=("Heartbeat monitor timed out", "watchdog got stuck"),
        pattern=_rx(r"Heartbeat monitor timed out|watchdog got stuck for (?P<secs>\d+) seconds"),
        cause="The watchdog thread itself stopped making progress: an NCCL/CUDA call hung, often a "
              "collective blocked on a dead peer or a stalled network, or a thread held the GIL.",
        fix="Find the rank that hung first (py-spy dump, TORCH_NCCL_DUMP_ON_TIMEOUT=1) and check "
            "its peers and network; raise TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only for false alarms.",
    ),
    Signature(
        id="nccl-error", severity="error", priority=90,
        title="NCCL returned an error",
        needles=("NCCL error", "ncclSystemError", "ncclInternalError", "ncclInvalidUsage",
                 "ncclRemoteError", "ncclUnhandledCudaError", "ncclInvalidArgument",
                 "NCCL failure", "communicator was aborted"),
        pattern=_rx(r"(?P<code>nccl(?:SystemError|InternalError|InvalidUsage|InvalidArgument|"
                    r"RemoteError|UnhandledCudaError))"
                    r"|NCCL (?:error|failure)\b[^,']*?[,']\s*'?(?P<what>unhandled system error|"
                    r"unhandled cuda error|internal error|invalid usage|invalid argument|"
                    r"remote process exited or there was a network error)"
                    r"|(?P<aborted>NCCL communicator was aborted)"),
        summary="{detail}",
        cause="A framework-level wrapper around an NCCL failure; the real cause is the first "
              "'NCCL WARN' line before it (shown as first_warn).",
        fix="Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and act on the first NCCL WARN.",
    ),
    # ------------------------------------------------------------ derived from facts
    Signature(
        id="socket-transport", severity="warn", priority=35,
        title="inter-node traffic uses TCP sockets",
        cause="NCCL chose its Socket transport (TCP over the pod network), typically 5-20x slower "
              "than InfiniBand/RoCE; on a cluster with an RDMA fabric it means the pod cannot see it.",
        fix="Expose the RDMA fabric to the pod (RDMA device plugin resource or SR-IOV + IPC_LOCK, "
            "rdma-core in the image) and set NCCL_NET=IB so a fallback fails instead of crawling.",
    ),
    Signature(
        id="virtual-interface", severity="warn", priority=33,
        title="NCCL uses a virtual/CNI interface",
        summary="NCCL picked {ifaces}",
        cause="NCCL's socket bootstrap or data path includes virtual interfaces (veth, CNI bridges, "
              "docker0, lo) whose addresses other nodes cannot reach or that ride the pod overlay.",
        fix="Set NCCL_SOCKET_IFNAME to the node's real network interface ({suggest}).",
    ),
    Signature(
        id="transport-mismatch", severity="error", priority=13,
        title="ranks chose different networks",
        summary="hosts disagree: {detail}",
        cause="Some pods see the RDMA fabric and others do not (missing RDMA resource, image or "
              "node differences), so ranks pick different transports and cannot connect.",
        fix="Give every worker pod the same RDMA resources, image and node pool; set NCCL_NET so "
            "all ranks use the same network.",
    ),
    Signature(
        id="nccl-version-mismatch", severity="warn", priority=14,
        title="different NCCL versions across ranks",
        summary="versions seen: {detail}",
        cause="Workers run different images or PyTorch builds; NCCL versions must match across ranks "
              "or bootstrap fails in confusing ways.",
        fix="Pin one image (one NCCL) for every worker of the job.",
    ),
    Signature(
        id="gdr-disabled", severity="warn", priority=36,
        title="GPUDirect RDMA is not in use",
        cause="The NIC reads GPU memory through host bounce buffers: nvidia-peermem (or DMA-BUF "
              "support) is not loaded on the node, or the GPU-NIC PCI distance exceeds "
              "NCCL_NET_GDR_LEVEL.",
        fix="Load nvidia-peermem (GPU Operator driver.rdma.enabled=true) or use a DMA-BUF capable "
            "driver and kernel; check `nvidia-smi topo -m` and NCCL_NET_GDR_LEVEL.",
    ),
    Signature(
        id="nccl-warn", severity="warn", priority=80,
        title="NCCL printed a warning",
        summary="{text}",
        cause="An NCCL WARN line that kubegpu has no specific signature for.",
        fix="Read the quoted line; NCCL WARN lines usually name the failing call and its errno.",
    ),
    Signature(
        id="no-nccl-output", severity="info", priority=99,
        title="no NCCL debug output in the log",
        cause="The log carries no NCCL INFO/WARN lines, so the transport cannot be determined.",
        fix="Rerun with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET (NCCL_DEBUG_FILE to keep it).",
    ),
)

BY_ID: dict[str, Signature] = {s.id: s for s in SIGNATURES}
LINE_SIGNATURES: tuple[Signature, ...] = tuple(s for s in SIGNATURES if s.pattern is not None)

# What the ncclResult_t names mean, for the nccl-error summary.
NCCL_RESULT_MEANINGS: dict[str, str] = {
    "ncclSystemError": "a system call or external library failed (socket, shm, verbs)",
    "ncclInternalError": "an internal check failed (often a bootstrap/interface problem)",
    "ncclInvalidUsage": "the application used NCCL wrongly (e.g. duplicate GPU)",
    "ncclInvalidArgument": "an invalid argument was passed to NCCL",
    "ncclRemoteError": "a network error or a remote process exiting prematurely",
    "ncclUnhandledCudaError": "a CUDA call failed",
}
