"""Spellings of the *facts* NCCL prints: chosen network, devices, interfaces, paths, versions.

Where `signatures` recognises problems, this table recognises what a run actually did, across
NCCL versions ("Bootstrap : Using", "Bootstrap: Using", "[0]eth0:10.0.0.1<0>" with or without
an index, empty addresses in 2.4, "via NET/IB/0(1)/GDRDMA/Shared" in 2.2x, "via direct shared
memory" before 2.5). Each fact has needles (literal prefilters) and one regex; `analyze`
folds the matches into a report. Interface naming conventions live here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubegpu.model.integers import parse_int


@dataclass(frozen=True, slots=True)
class FactPattern:
    """One kind of fact line: its literal needles and its regex."""

    name: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]


FACT_PATTERNS: tuple[FactPattern, ...] = (
    # init.cc "Using network %s": the authoritative choice (IB, Socket, IBext, AWS Libfabric ...).
    FactPattern("network", ("Using network",), re.compile(r"Using network (?P<net>.+?)\s*$")),
    FactPattern("ib_devices", ("Using [",),
                re.compile(r"NET/(?P<net>IB\w*)\s*:\s*Using (?P<devs>.*?)(?:;\s*OOB (?P<oob>.*))?$")),
    FactPattern("socket_ifs", ("Using [",),
                re.compile(r"NET/(?P<net>Socket|FastSocket|GPUDirectTCPX\w*)\s*:\s*Using (?P<ifs>.*)$")),
    FactPattern("bootstrap_ifs", ("Bootstrap",),
                re.compile(r"Bootstrap\s*:\s*Using (?P<ifs>.*)$")),
    FactPattern("channel", (" via ",),
                re.compile(r"\bvia (?P<path>NET/.+?/\d+(?:\(\d+\))?(?:/[\w]+)*|P2P/(?:direct pointer|\w+)"
                           r"|SHM/\w+|direct shared memory|direct pointer|P2P\b|CollNet\w*|NVLS\w*)")),
    FactPattern("gdr", ("GPU Direct RDMA",),
                re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for (?:(?P<gpu>GPU) \S+ / )?HCA")),
    FactPattern("version", ("NCCL version",),
                re.compile(r"NCCL version:? ?(?P<ver>\d+\.\d+\.\d+)(?:[+-](?P<build>[\w.]+))?")),
    FactPattern("env", ("set by environment to", "set to "),
                re.compile(r"(?P<var>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<val>.*?)\.?\s*$")),
    FactPattern("comm", ("ranks ", "nRanks "),
                re.compile(r"\brank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)(?: nNodes (?P<nnodes>\d+))?")),
    FactPattern("tests_rank", ("Rank ",),
                re.compile(r"#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")),
    FactPattern("init_complete", ("Init COMPLETE", "Connected all"),
                re.compile(r"Init COMPLETE|Connected all (?:rings|trees)")),
    FactPattern("plugin", ("NET/Plugin", "P2P plugin", "NET/OFI Initializing"),
                re.compile(r"(?:NET/Plugin\s*:?\s*Loaded (?:net )?plugin (?P<name>.+?)(?: \(v\d+\))?\s*$"
                           r"|P2P plugin (?:v\d+ )?(?P<p2p>\w+)"
                           r"|NET/OFI Initializing (?P<ofi>aws-ofi-nccl\S*(?: \S+)?))")),
    FactPattern("busbw", ("bus bandwidth",),
                re.compile(r"Avg bus bandwidth\s*:\s*(?P<bw>\d+(?:\.\d+)?)")),
    # NCCL >= 2.1: "... [dev] file.cc:123 NCCL WARN msg"; NCCL 2.0: "[dev] include/socket.h:185 WARN msg".
    FactPattern("warn", ("WARN",),
                re.compile(r"(?:\bNCCL WARN|\] (?:[\w./]+:\d+ )?WARN)\s+(?P<msg>.*)$")),
)

# Interface entries: "[0]ens5:172.31.0.137<0>", "eth0:10.0.0.1<0>", "[1]veth1:fe80::1%veth1<0>",
# "[0]enp41s0f1:<0>" (2.4 printed no address).
_IFACE = re.compile(r"(?:\[\d+\])?(?P<name>[A-Za-z0-9][\w.\-@]*):(?P<addr>[^\s<]*)<\d+>")
# IB devices: "[0]mlx5_0:1/IB", "mlx5_2:1/RoCE", "mlx5_0:1/IB/SHARP", "hfi1_0:1/IB".
_HCA = re.compile(r"(?<![\w.])(?P<name>[A-Za-z][\w.\-]*):(?P<port>\d+)/(?P<link>[A-Za-z]+)(?:/(?P<extra>[A-Z]+))?")

# Interface name prefixes that are container/CNI plumbing or loopback, not a node's fabric.
VIRTUAL_PREFIXES: tuple[str, ...] = (
    "veth", "cali", "flannel", "cni", "cilium", "lxc", "weave", "vxlan", "tunl", "kube-", "docker",
    "virbr", "br-", "genev", "antrea", "ovn-", "ovs-", "nodelocaldns", "tap", "vnet", "cbr", "gke",
)


@dataclass(frozen=True, slots=True)
class Hca:
    """An RDMA device port NCCL listed, with its link layer (IB, RoCE) and extras (SHARP)."""

    name: str
    port: int
    link: str
    extra: str | None = None


def parse_interfaces(text: str) -> list[tuple[str, str]]:
    """(name, address) pairs from a Bootstrap / NET/Socket / OOB interface list."""
    return [(m["name"], m["addr"]) for m in _IFACE.finditer(text)]


def parse_hcas(text: str, where: str | None = None) -> list[Hca]:
    """RDMA ports from the device part of a `NET/IB : Using ...` line (`where` names it in errors)."""
    return [Hca(m["name"], parse_int(m["port"], where=where, field="port"), m["link"], m["extra"])
            for m in _HCA.finditer(text)]


def interface_kind(name: str) -> str:
    """'loopback', 'virtual' (CNI/container plumbing), 'infiniband' (IPoIB) or 'physical'."""
    base = name.split("@", 1)[0]
    if base == "lo" or base.startswith("lo:"):
        return "loopback"
    if base.startswith(VIRTUAL_PREFIXES):
        return "virtual"
    if base.startswith("ib"):
        return "infiniband"
    return "physical"


def channel_path(raw: str) -> str:
    """Normalise a channel's transport: 'NET/IB/0(1)/GDRDMA/Shared' -> 'NET/IB/GDRDMA'."""
    if raw.startswith("NET/"):
        m = re.match(r"NET/(?P<net>.+?)/\d+", raw)
        net = m["net"] if m else raw[4:]
        return f"NET/{net}/GDRDMA" if "/GDRDMA" in raw else f"NET/{net}"
    if raw.startswith("P2P/"):
        return "P2P/" + raw[4:].split("/", 1)[0]
    if raw.startswith("SHM") or raw == "direct shared memory":
        return "SHM"
    if raw == "direct pointer":
        return "P2P/direct pointer"
    return raw
