"""The result of `kubegpu nccl`: typed, serialisable, and stable for JSON consumers.

DESIGN section 4 fixes `transport`, `gdr`, `findings` and `verdict`; the other fields are
additions (what NCCL chose and why we think so).
"""

from __future__ import annotations

from typing import Literal

import msgspec

Status = Literal["healthy", "degraded", "failed", "no-evidence"]


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """Where a finding was seen: file, 1-based line, and the normalised line text."""

    file: str
    line: int
    text: str

    @property
    def at(self) -> str:
        return f"{self.file}:{self.line}"


class Finding(msgspec.Struct, kw_only=True):
    """One diagnosed problem (or notable fact), aggregated over every line that showed it."""

    id: str
    severity: str
    title: str
    message: str
    cause: str
    fix: str
    count: int = 1
    evidence: list[Evidence] = []
    ranks: list[int] = []
    hosts: list[str] = []


class Interface(msgspec.Struct, frozen=True, kw_only=True):
    """A socket interface NCCL listed; roles say where (bootstrap, socket, oob)."""

    name: str
    address: str
    kind: str
    roles: list[str]


class HcaPort(msgspec.Struct, frozen=True, kw_only=True):
    """An RDMA device port from `NET/IB : Using ...`."""

    name: str
    port: int
    link: str
    extra: str | None = None


class FileSummary(msgspec.Struct, frozen=True, kw_only=True):
    """How much of each input was read and how much of it was NCCL output."""

    path: str
    lines: int
    nccl_lines: int


class NcclReport(msgspec.Struct, kw_only=True):
    """Everything `kubegpu nccl` learned from a set of logs."""

    transport: str
    gdr: bool | None
    findings: list[Finding]
    verdict: str
    status: Status
    gdr_basis: str = ""
    networks: list[str] = []
    plugin: str | None = None
    hcas: list[HcaPort] = []
    interfaces: list[Interface] = []
    paths: list[str] = []
    nccl_version: str | None = None
    nccl_versions: list[str] = []
    env: dict[str, str] = {}
    hosts: list[str] = []
    ranks: list[int] = []
    nranks: int | None = None
    nnodes: int | None = None
    bus_bandwidth_gbps: float | None = None
    first_warn: Evidence | None = None
    files: list[FileSummary] = []

    def has_severity(self, level: str) -> bool:
        """True if any finding is at `level` or above (info < warn < error)."""
        order = {"info": 0, "warn": 1, "error": 2}
        return any(order[f.severity] >= order[level] for f in self.findings)
