"""`kubegpu doctor -o html`: one self-contained page (inline CSS, the GPU map as an inline PNG).

No scripts, no external assets: the file can be attached to a ticket or opened offline.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from kubegpu.audit.catalog import PITFALLS
from kubegpu.doctor import DoctorReport
from kubegpu.money.text import money_lines

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1b1f24;max-width:1200px}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.meta{color:#57606a} table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top} th{background:#f6f8fa}
.error{color:#cf222e;font-weight:600} .warn{color:#9a6700;font-weight:600} .info{color:#57606a}
.kpi{display:inline-block;margin-right:2rem} .kpi b{font-size:1.4rem;display:block}
.note{background:#fff8c5;padding:.4rem .6rem;border:1px solid #d4a72c;display:inline-block}
.nowrap{white-space:nowrap} h3{font-size:1rem;margin:1.2rem 0 .3rem} code{background:#f6f8fa;padding:0 .2rem;font-size:.85em}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(headers: list[str], rows: list[list[Any]], raw_cols: tuple[int, ...] = (),
           nowrap_cols: tuple[int, ...] = ()) -> str:
    """An HTML table; `raw_cols` hold HTML already, `nowrap_cols` are never broken (IDs, names)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)

    def cell(i: int, c: Any) -> str:
        attr = " class='nowrap'" if i in nowrap_cols else ""
        return f"<td{attr}>{c if i in raw_cols else _e(c)}</td>"

    body = "".join("<tr>" + "".join(cell(i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _kpi(label: str, value: Any) -> str:
    return f'<span class="kpi"><b>{_e(value)}</b>{_e(label)}</span>'


def _code(text: str) -> str:
    """Escape text and render `backticked` spans as <code>."""
    parts = str(text).split("`")
    return "".join(f"<code>{_e(p)}</code>" if i % 2 else _e(p) for i, p in enumerate(parts))


def _audit(audit: dict[str, Any]) -> str:
    """Findings grouped by pitfall (worst group first, as the audit sorts them), one table per pitfall."""
    parts = [f"<h2>Audit (score {audit['score']}/100)</h2>"]
    groups: dict[int, list[dict[str, Any]]] = {}
    for f in audit["findings"]:
        groups.setdefault(f["pitfall"], []).append(f)
    for pitfall, items in groups.items():
        parts.append(f"<h3>Pitfall {pitfall}: {_e(PITFALLS.get(pitfall, ''))} ({len(items)})</h3>")
        rows = [[f"<span class='{_e(f['severity'])}'>{_e(f['severity'])}</span>", _e(f["id"]), _e(f["object"]),
                 _code(f["message"]), _code(f["remediation"])] for f in items]
        parts.append(_table(["severity", "check", "object", "finding", "remediation"], rows,
                            raw_cols=(0, 1, 2, 3, 4), nowrap_cols=(0, 1)))
    return "".join(parts)


def render_html(report: DoctorReport, data: dict[str, Any], gpu_map_png: bytes | None) -> str:
    """The doctor report as an HTML page; `data` is the report as plain data."""
    sections = data["sections"]
    scope = f" · namespace {_e(report.namespace)}" if report.namespace else ""
    parts = [f"<h1>kubegpu doctor</h1><div class='meta'>source {_e(report.source)}"
             f"{' · Kubernetes ' + _e(report.server_version) if report.server_version else ''}{scope}</div>"]
    status = sections.get("status")
    if status:
        t = status["totals"]
        parts.append("<h2>Status</h2>" + _kpi("nodes", t["nodes"]) + _kpi("GPU nodes", t["gpu_nodes"])
                     + _kpi("GPUs", t["gpus"]["total"]) + _kpi("allocated", t["gpus"]["allocated"])
                     + _kpi("free", t["gpus"]["free"]) + _kpi("allocation", f"{t['allocation_ratio']:.1%}"))
        rows = [[n["name"], n["pool"], n["gpu_model"] or "-", n["gpus"]["total"], n["gpus"]["allocated"],
                 n["gpus"]["free"], n["pods"]] for n in status["nodes"] if n["gpus"]["total"]]
        parts.append(_table(["node", "pool", "GPU model", "GPUs", "allocated", "free", "pods"], rows,
                            nowrap_cols=(0, 2)))
    frag = sections.get("fragmentation")
    if frag:
        s = frag["stranded_for_demand"]
        shares = ", ".join(f"{k}-GPU {v:.0%}" for k, v in frag["demand"]["gpu_share_by_size"].items())
        parts.append("<h2>Fragmentation</h2>"
                     + _kpi("stranded for the cluster's GPU demand", f"{s['gpus']:.2f} GPUs ({s['rate']:.0%})")
                     + _kpi("largest pod that fits now", f"{s['largest_fit']} GPU" if s["largest_fit"] == 1
                            else f"{s['largest_fit']} GPUs")
                     + _kpi("FGD measure (mix incl. CPU-only shapes)", f"{frag['fragmentation']['rate']:.1%}"))
        parts.append(f"<p class='meta'>Demand: the cluster's GPU pods; requested GPUs by pod size: {_e(shares)}. "
                     "Stranded GPUs for size k are the free GPUs a k-GPU pod cannot use.</p>")
        parts.append(_table(["pod size", "pods that fit now", "stranded GPUs"],
                            [[f"{k} GPU" if k == "1" else f"{k} GPUs", frag["fits_by_size"].get(k),
                              frag["stranded_by_size"].get(k)] for k in frag["fits_by_size"]]))
        if gpu_map_png:
            b64 = base64.b64encode(gpu_map_png).decode()
            parts.append('<p><img alt="GPU map: one cell per GPU device, coloured by owner workload class and '
                         f'priority; free, stranded and cordoned devices marked" src="data:image/png;base64,{b64}" '
                         'style="max-width:100%"></p>')
    money = sections.get("money")
    if money:
        items = "".join(f"<li>{_e(line.strip())}</li>" for line in money_lines(money))
        parts.append(f"<h2>Money</h2><ul>{items}</ul>")
    pending = sections.get("pending")
    if pending is not None:
        phase = data.get("pending_phase")
        note = (f" <span class='meta'>kubectl's phase=Pending: {phase['phase_pending']} = "
                f"{phase['waiting_for_node']} waiting for a node + {phase['bound_not_started']} bound, "
                "not started</span>") if phase else ""
        parts.append(f"<h2>Pending GPU pods waiting for a node ({len(pending)})</h2>{note}")
        if pending:
            parts.append(_table(["pod", "kube-scheduler says", "first remedy"],
                                [[_e(p["pod"]) + (f"<br><span class='meta'>{_e(p['gang'])}</span>"
                                                  if p.get("gang") else ""), _e(p["reason"]),
                                  _code(p["first_remedy"] or "-")] for p in pending], raw_cols=(0, 1, 2)))
    plan = sections.get("defrag")
    if plan:
        parts.append("<h2>Defrag preview <span class='note'>not applied</span></h2>"
                     f"<p>{_e(plan.get('message', ''))}</p>")
        if plan.get("moves"):
            parts.append(_table(["pod", "from", "to", "GPU-hours lost"],
                                [[m["pod"], m["from"], m["to"], f"{m['gpu_hours']:.2f}"] for m in plan["moves"]],
                                nowrap_cols=(0, 1, 2)))
        if plan.get("command"):
            parts.append(f"<p>Plan it in full: <code>{_e(plan['command'])}</code></p>")
    audit = sections.get("audit")
    if audit:
        parts.append(_audit(audit))
    models = sections.get("models")
    if models:
        sm = models["summary"]
        parts.append(f"<h2>Model caches</h2><p>{sm['caches']} ModelCache(s), {sm['ready']} ready, "
                     f"{sm['invalid']} invalid</p>")
        parts.append(_table(["model", "version", "target nodes by state", "copies (verified/total)", "ready"],
                            [[c["model"], c["version"] or "-",
                              c["error"] or ", ".join(f"{n} {st}" for st, n in c["nodes"].items() if n) or "-",
                              f"{c['copies'].get('available', 0)}/{c['copies'].get('total', 0)}",
                              "yes" if c["ready"] else "no"] for c in models["caches"]], nowrap_cols=(0,)))
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>kubegpu doctor</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")
