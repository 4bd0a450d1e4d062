"""Turn a finished `LogScan` into an `NcclReport`: transport, GPUDirect RDMA, derived findings
and the one-sentence verdict.

Rules, in the order a human would apply them:
- `Using network X` is authoritative; channel lines (`via NET/X/...`) and the device lists of
  older NCCL (no `Using network` line before 2.6) are fallbacks.
- GPUDirect RDMA is *used* when a NET channel says GDRDMA; per-GPU `GPU Direct RDMA Enabled for
  GPU ... / HCA` lines come next; an HCA that merely *supports* it proves nothing on its own.
- The verdict names the most severe finding closest to a root cause (lowest priority number).
"""

from __future__ import annotations

import string

from kubegpu.nccl.report import Evidence, FileSummary, Finding, HcaPort, Interface, NcclReport, Status
from kubegpu.nccl.scan import Hit, LogScan
from kubegpu.nccl.signatures import BY_ID, NCCL_RESULT_MEANINGS, SEVERITY_ORDER, Signature

_IB_FAMILY_PREFIX = "IB"  # IB, IBext, IBext_v8 ... (the HPC-X SHARP plugin also runs on verbs)
_DEFAULT_EXCLUDE = "^lo,docker,veth,cali,flannel,cni"


_OPTIONAL_FIELDS = frozenset({"what", "what2"})  # alternatives of one regex: absent ones render empty


class _Blank(string.Formatter):
    """str.format where a missing field renders as '?' (or '' for an optional alternative)."""

    def get_value(self, key, args, kwargs):  # type: ignore[override]
        value = kwargs.get(key) if isinstance(key, str) else None
        if value is None:
            return "" if key in _OPTIONAL_FIELDS else "?"
        return value


_FMT = _Blank()


def _fill(template: str, values: dict[str, str]) -> str:
    return _FMT.format(template, **values) if "{" in template else template


# ---------------------------------------------------------------- transport and GDR

def network_family(net: str) -> str:
    """'IB' for IB/IBext*, 'Socket', or the plugin's own network name."""
    return "IB" if net.startswith(_IB_FAMILY_PREFIX) else net


def _link_layer(scan: LogScan) -> str:
    links = {h.link for h in scan.hcas.values()}
    return "RoCE" if links and links <= {"RoCE", "ETH"} else "IB"


def decide_transport(scan: LogScan) -> str:
    """The transport a human would name: IB, RoCE, Socket, a plugin network, mixed or unknown."""
    families = {network_family(n) for nets in scan.networks_by_host.values() for n in nets}
    if not families:
        families = {network_family(p.split("/")[1]) for p in scan.paths if p.startswith("NET/")}
    if not families and scan.hcas:
        families = {"IB"}
    if not families and any(i.roles & {"socket"} for i in scan.interfaces.values()):
        families = {"Socket"}
    if not families:
        return "unknown"
    if len(families) > 1:
        return "mixed"
    family = families.pop()
    return _link_layer(scan) if family == "IB" else family


def decide_gdr(scan: LogScan, transport: str) -> tuple[bool | None, str]:
    """(gdr, basis): whether GPUDirect RDMA carried inter-node traffic, and why we think so."""
    net_paths = [p for p in scan.paths if p.startswith("NET/")]
    if any(p.endswith("/GDRDMA") for p in net_paths):
        return True, "channels via NET/.../GDRDMA"
    if net_paths:
        return False, "NET channels without GDRDMA"
    if "Enabled" in scan.gdr_gpu:
        return True, "GPU Direct RDMA Enabled for a GPU/HCA pair"
    if scan.gdr_gpu:
        return False, "GPU Direct RDMA Disabled for every GPU/HCA pair"
    if transport == "Socket":
        return False, "Socket transport cannot do GPUDirect RDMA"
    if scan.gdr_hca == {"Disabled"}:
        return False, "no HCA supports GPU Direct RDMA"
    if "Enabled" in scan.gdr_hca:
        return None, "HCA supports GPU Direct RDMA; no channel lines show whether it was used"
    return None, "no GPUDirect RDMA evidence in the log"


def _single_node(scan: LogScan) -> bool:
    if scan.nnodes is not None:
        return scan.nnodes <= 1
    return bool(scan.paths) and not any(p.startswith("NET/") for p in scan.paths)


# ---------------------------------------------------------------- findings

def _finding(sig: Signature, values: dict[str, str], *, count: int = 1, evidence: list[Evidence] | None = None,
             ranks: set[int] | None = None, hosts: set[str] | None = None) -> Finding:
    summary = _fill(sig.summary, values).strip() if sig.summary else ""
    message = f"{sig.title}: {summary}" if summary and summary != "?" else sig.title
    return Finding(id=sig.id, severity=sig.severity, title=sig.title, message=message,
                   cause=_fill(sig.cause, values), fix=_fill(sig.fix, values), count=count,
                   evidence=evidence or [], ranks=sorted(ranks or ()), hosts=sorted(hosts or ()))


def _from_hit(hit: Hit) -> Finding:
    values = dict(hit.groups)
    if hit.signature.id == "nccl-error":
        code = values.get("code")
        parts = [f"{code} ({NCCL_RESULT_MEANINGS[code]})" if code in NCCL_RESULT_MEANINGS else code,
                 values.get("what"), values.get("aborted")]
        values["detail"] = "; ".join(p for p in parts if p)
    return _finding(hit.signature, values, count=hit.count, evidence=hit.evidence, ranks=hit.ranks, hosts=hit.hosts)


def derived_findings(scan: LogScan, transport: str, gdr: bool | None) -> list[Finding]:
    """Findings that come from the facts as a whole rather than from one line."""
    out: list[Finding] = []
    single = _single_node(scan)
    if transport == "Socket" and not single:
        out.append(_finding(BY_ID["socket-transport"], {},
                            evidence=[scan.network_evidence] if scan.network_evidence else []))
    bad = [i for i in scan.interfaces.values()
           if i.kind == "virtual" or (i.kind == "loopback" and not single)]
    if bad:
        good = sorted({i.name for i in scan.interfaces.values() if i.kind in ("physical", "infiniband")})
        suggest = f"NCCL_SOCKET_IFNAME={','.join(good)}" if good else f"NCCL_SOCKET_IFNAME={_DEFAULT_EXCLUDE}"
        names = ", ".join(f"{i.name} ({'loopback' if i.kind == 'loopback' else 'virtual'}, "
                          f"{'/'.join(sorted(i.roles))})" for i in bad)
        out.append(_finding(BY_ID["virtual-interface"], {"ifaces": names, "suggest": suggest},
                            evidence=[i.evidence for i in bad][:3]))
    families = {h: {network_family(n) for n in nets} for h, nets in scan.networks_by_host.items()}
    if transport == "mixed":
        detail = "; ".join(f"{h}: {', '.join(sorted(f))}" for h, f in sorted(families.items()))
        out.append(_finding(BY_ID["transport-mismatch"], {"detail": detail},
                            evidence=[scan.network_evidence] if scan.network_evidence else []))
    if len(scan.versions) > 1:
        out.append(_finding(BY_ID["nccl-version-mismatch"], {"detail": ", ".join(sorted(scan.versions.values()))}))
    if transport in ("IB", "RoCE") and gdr is False:
        out.append(_finding(BY_ID["gdr-disabled"], {}))
    if scan.nccl_lines == 0:
        out.append(_finding(BY_ID["no-nccl-output"], {}))
    return out


def _order(finding: Finding) -> tuple[int, int, str]:
    return (-SEVERITY_ORDER[finding.severity], BY_ID[finding.id].priority, finding.id)


# ---------------------------------------------------------------- verdict

def _transport_phrase(report_transport: str, scan: LogScan, gdr: bool | None) -> str:
    if report_transport in ("IB", "RoCE"):
        ports = ", ".join(f"{h.name}:{h.port}" for h in list(scan.hcas.values())[:4])
        gdr_txt = {True: "with GPUDirect RDMA", False: "without GPUDirect RDMA",
                   None: "GPUDirect RDMA not shown"}[gdr]
        return f"{report_transport}{f' over {ports}' if ports else ''} ({gdr_txt})"
    if report_transport == "Socket":
        ifaces = [i for i in scan.interfaces.values() if "socket" in i.roles] or \
                 [i for i in scan.interfaces.values() if "bootstrap" in i.roles]
        names = [i.name + (f" ({i.kind})" if i.kind in ("virtual", "loopback") else "") for i in ifaces[:4]]
        return f"Socket (TCP){' over ' + ', '.join(names) if names else ''}"
    if report_transport == "mixed":
        nets = sorted({n for s in scan.networks_by_host.values() for n in s})
        return f"mixed ({', '.join(nets)})"
    if report_transport == "unknown":
        return "unknown (no NCCL_DEBUG=INFO transport lines)"
    return f"{report_transport} (net plugin)"


def _first_clause(text: str) -> str:
    head = text.split(". ", 1)[0].rstrip(".")
    return head[0].lower() + head[1:] if head[:1].isupper() and not head[1:2].isupper() else head


def make_verdict(findings: list[Finding], transport_phrase: str, version: str | None) -> tuple[Status, str]:
    """The status and the one sentence a human reads first."""
    top = findings[0] if findings else None
    nccl = f"NCCL {version}" if version else "NCCL"
    if top is None or top.severity == "info":
        if transport_phrase.startswith("unknown"):
            return "no-evidence", (f"No NCCL transport evidence in the log; rerun with NCCL_DEBUG=INFO "
                                   f"NCCL_DEBUG_SUBSYS=INIT,NET to see what {nccl} chose.")
        return "healthy", f"Healthy: {nccl} used {transport_phrase}; no failures found."
    status: Status = "failed" if top.severity == "error" else "degraded"
    ranks = f" on rank{'s' if len(top.ranks) > 1 else ''} {', '.join(map(str, top.ranks[:8]))}" if top.ranks else ""
    others = len([f for f in findings[1:] if f.severity != "info"])
    more = f" (+{others} more finding{'s' if others != 1 else ''})" if others else ""
    return status, (f"{status.capitalize()}: {top.message}{ranks}; transport {transport_phrase} — "
                    f"fix: {_first_clause(top.fix)}{more}.")


def build_report(scan: LogScan, files: list[FileSummary]) -> NcclReport:
    """Assemble the final report from a completed scan."""
    transport = decide_transport(scan)
    gdr, basis = decide_gdr(scan, transport)
    findings = [_from_hit(h) for h in scan.hits.values()] + derived_findings(scan, transport, gdr)
    findings.sort(key=_order)
    versions = sorted(scan.versions.values())
    version = versions[0] if len(versions) == 1 else (", ".join(versions) if versions else None)
    status, verdict = make_verdict(findings, _transport_phrase(transport, scan, gdr), version)
    return NcclReport(
        transport=transport, gdr=gdr, findings=findings, verdict=verdict, status=status, gdr_basis=basis,
        networks=sorted({n for s in scan.networks_by_host.values() for n in s}),
        plugin=scan.plugin,
        hcas=[HcaPort(name=h.name, port=h.port, link=h.link, extra=h.extra) for h in scan.hcas.values()],
        interfaces=[Interface(name=i.name, address=i.address, kind=i.kind, roles=sorted(i.roles))
                    for i in scan.interfaces.values()],
        paths=sorted(scan.paths), nccl_version=versions[0] if versions else None, nccl_versions=versions,
        env=dict(sorted(scan.env.items())), hosts=sorted(scan.hosts), ranks=sorted(scan.ranks),
        nranks=scan.nranks, nnodes=scan.nnodes, bus_bandwidth_gbps=scan.busbw,
        first_warn=scan.first_warn, files=files,
    )
