"""One streaming pass over log lines, folding signature hits and facts into bounded state.

`LogScan.feed` looks at a line only if it contains one of a few literal anchors (cheap `in`
tests), then only runs the regexes whose needles occur in it. Everything kept is bounded by
the cluster (hosts, ranks, interfaces) or capped (evidence per finding), never by log size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.model.integers import parse_int
from kubegpu.nccl.facts import FACT_PATTERNS, FactPattern, Hca, channel_path, interface_kind, parse_hcas, parse_interfaces
from kubegpu.nccl.parse import LogLine, line_origin
from kubegpu.nccl.report import Evidence
from kubegpu.nccl.signatures import BY_ID, LINE_SIGNATURES, Signature

MAX_EVIDENCE = 3
MAX_TEXT = 400
MAX_TRACKED = 4096  # ranks/hosts kept per finding: a bound, not a cluster-size assumption

_CORE_ANCHORS = ("NCCL", "nccl", "WARN", "NET/", "atchdog", "Rank ", "rank", " via ", "Bootstrap",
                 "bus bandwidth", "libibverbs", "Duplicate GPU", "onnect", "socket")


def _anchors(needles: Iterable[str]) -> tuple[str, ...]:
    """Core anchors plus every needle no core anchor covers, so no needle can slip past the gate."""
    extra = sorted({n for n in needles if not any(a in n for a in _CORE_ANCHORS)})
    return _CORE_ANCHORS + tuple(extra)


_NEEDLE_TO_SIGS: dict[str, list[Signature]] = {}
for _sig in LINE_SIGNATURES:
    for _n in _sig.needles:
        _NEEDLE_TO_SIGS.setdefault(_n, []).append(_sig)
_NEEDLE_TO_FACTS: dict[str, list[FactPattern]] = {}
for _fact in FACT_PATTERNS:
    for _n in _fact.needles:
        _NEEDLE_TO_FACTS.setdefault(_n, []).append(_fact)
_CHANNEL = next(f.pattern for f in FACT_PATTERNS if f.name == "channel")
ALL_NEEDLES: tuple[str, ...] = tuple(sorted(set(_NEEDLE_TO_SIGS) | set(_NEEDLE_TO_FACTS)))
ANCHORS: tuple[str, ...] = _anchors(ALL_NEEDLES)


def passes_gate(text: str) -> bool:
    """Whether a line contains an anchor, i.e. could match any signature or fact."""
    return any(a in text for a in ANCHORS)


def evidence_of(line: LogLine) -> Evidence:
    text = line.text if len(line.text) <= MAX_TEXT else line.text[:MAX_TEXT] + "..."
    return Evidence(file=line.file, line=line.number, text=text)


@dataclass(slots=True)
class Hit:
    """Aggregate of one finding id over the scan."""

    signature: Signature
    groups: dict[str, str]
    count: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)

    def add(self, line: LogLine, rank: int | None, host: str | None) -> None:
        self.count += 1
        if len(self.evidence) < MAX_EVIDENCE:
            self.evidence.append(evidence_of(line))
        if rank is not None and len(self.ranks) < MAX_TRACKED:
            self.ranks.add(rank)
        if host is not None and len(self.hosts) < MAX_TRACKED:
            self.hosts.add(host)


@dataclass(slots=True)
class SeenInterface:
    name: str
    address: str
    roles: set[str]
    evidence: Evidence

    @property
    def kind(self) -> str:
        return interface_kind(self.name)


@dataclass(slots=True)
class LogScan:
    """Mutable accumulator for one analysis; feed it lines, then hand it to `diagnose`."""

    hits: dict[str, Hit] = field(default_factory=dict)
    networks_by_host: dict[str, set[str]] = field(default_factory=dict)
    network_evidence: Evidence | None = None
    hcas: dict[tuple[str, int], Hca] = field(default_factory=dict)
    interfaces: dict[str, SeenInterface] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    gdr_gpu: set[str] = field(default_factory=set)   # "Enabled"/"Disabled" per GPU-NIC pair
    gdr_hca: set[str] = field(default_factory=set)   # capability per HCA
    versions: dict[str, str] = field(default_factory=dict)  # "2.19.3" -> "2.19.3+cuda12.3"
    env: dict[str, str] = field(default_factory=dict)
    hosts: set[str] = field(default_factory=set)
    ranks: set[int] = field(default_factory=set)
    nranks: int | None = None
    nnodes: int | None = None
    init_complete: int = 0
    plugin: str | None = None
    busbw: float | None = None
    first_warn: Evidence | None = None
    nccl_lines: int = 0

    # ---------------------------------------------------------------- feeding
    def feed(self, line: LogLine) -> bool:
        """Scan one line; True if it was NCCL/PyTorch-distributed output.

        Callers pass lines that contain an anchor (`LogReader(..., ANCHORS)` or `passes_gate`);
        other lines cannot match anything.
        """
        text = line.text
        is_nccl = "NCCL INFO" in text or "NCCL WARN" in text
        if is_nccl and " via " in text and "NCCL WARN" not in text:
            # Per-channel INFO lines are most of a big NCCL log and only ever carry the path.
            self.nccl_lines += 1
            m = _CHANNEL.search(text)
            if m is not None:
                self._on_channel(m, line, None, False)
            return True
        present = [n for n in ALL_NEEDLES if n in text]
        if is_nccl:
            self.nccl_lines += 1
        if not present:
            return is_nccl
        origin = line_origin(text, line.where)
        if origin.host and len(self.hosts) < MAX_TRACKED and is_nccl:
            self.hosts.add(origin.host)
        if origin.rank is not None and len(self.ranks) < MAX_TRACKED:
            self.ranks.add(origin.rank)
        matched_sig = self._match_signatures(line, present, origin.rank, origin.host)
        self._match_facts(line, present, origin.host, matched_sig)
        return True

    def _match_signatures(self, line: LogLine, present: list[str], rank: int | None, host: str | None) -> bool:
        tried: set[str] = set()
        matched = False
        for needle in present:
            for sig in _NEEDLE_TO_SIGS.get(needle, ()):
                if sig.id in tried:
                    continue
                tried.add(sig.id)
                m = sig.pattern.search(line.text) if sig.pattern else None
                if m is None:
                    continue
                matched = True
                hit = self.hits.get(sig.id)
                if hit is None:
                    hit = self.hits[sig.id] = Hit(sig, {})
                for key, value in m.groupdict().items():
                    if value is not None:
                        hit.groups.setdefault(key, value)  # first value wins; later lines fill gaps
                hit.add(line, rank, host)
        return matched

    def _match_facts(self, line: LogLine, present: list[str], host: str | None, matched_sig: bool) -> None:
        done: set[str] = set()
        for needle in present:
            for fact in _NEEDLE_TO_FACTS.get(needle, ()):
                if fact.name in done:
                    continue
                done.add(fact.name)
                m = fact.pattern.search(line.text)
                if m is not None:
                    getattr(self, f"_on_{fact.name}")(m, line, host, matched_sig)

    # ---------------------------------------------------------------- fact handlers
    def _on_network(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self.networks_by_host.setdefault(host or "?", set()).add(m["net"])
        if self.network_evidence is None:
            self.network_evidence = evidence_of(line)

    def _on_ib_devices(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        for hca in parse_hcas(m["devs"], line.where):
            self.hcas.setdefault((hca.name, hca.port), hca)
        if m["oob"]:
            self._add_interfaces(m["oob"], "oob", line)

    def _on_socket_ifs(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self._add_interfaces(m["ifs"], "socket" if m["net"] == "Socket" else m["net"], line)

    def _on_bootstrap_ifs(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self._add_interfaces(m["ifs"], "bootstrap", line)

    def _add_interfaces(self, text: str, role: str, line: LogLine) -> None:
        for name, addr in parse_interfaces(text):
            seen = self.interfaces.get(name)
            if seen is None:
                if len(self.interfaces) < MAX_TRACKED:
                    self.interfaces[name] = SeenInterface(name, addr, {role}, evidence_of(line))
            else:
                seen.roles.add(role)

    def _on_channel(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        if len(self.paths) < 64:
            self.paths.add(channel_path(m["path"]))

    def _on_gdr(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        (self.gdr_gpu if m["gpu"] else self.gdr_hca).add(m["state"])

    def _on_version(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        ver = m["ver"]
        full = f"{ver}+{m['build']}" if m["build"] else ver
        if len(self.versions.get(ver, "")) < len(full):
            self.versions[ver] = full

    def _on_env(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self.env.setdefault(m["var"], m["val"])

    def _on_comm(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        if len(self.ranks) < MAX_TRACKED:
            self.ranks.add(parse_int(m["rank"], where=line.where, field="rank"))
        self.nranks = max(self.nranks or 0, parse_int(m["nranks"], where=line.where, field="nranks"))
        if m["nnodes"]:
            self.nnodes = max(self.nnodes or 0, parse_int(m["nnodes"], where=line.where, field="nNodes"))

    def _on_tests_rank(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        if len(self.ranks) < MAX_TRACKED:
            self.ranks.add(parse_int(m["rank"], where=line.where, field="rank"))
        if len(self.hosts) < MAX_TRACKED:
            self.hosts.add(m["host"])

    def _on_init_complete(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self.init_complete += 1

    def _on_plugin(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        if self.plugin is None:
            self.plugin = (m["name"] or m["p2p"] or m["ofi"] or "").strip() or None

    def _on_busbw(self, m: re.Match[str], line: LogLine, host: str | None, _sig: bool) -> None:
        self.busbw = float(m["bw"])

    def _on_warn(self, m: re.Match[str], line: LogLine, host: str | None, matched_sig: bool) -> None:
        if self.first_warn is None:
            self.first_warn = evidence_of(line)
        if not matched_sig:
            hit = self.hits.get("nccl-warn")
            if hit is None:
                hit = self.hits["nccl-warn"] = Hit(BY_ID["nccl-warn"], {"text": m["msg"][:200]})
            hit.add(line, None, host)
