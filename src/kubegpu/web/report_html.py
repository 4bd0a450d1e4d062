"""`kubegpu doctor -o html`: one self-contained page (inline CSS, the GPU map as an inline PNG).

No scripts, no external assets: the file can be attached to a ticket or opened offline.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from kubegpu.doctor import DoctorReport

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1b1f24;max-width:1200px}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.meta{color:#57606a} table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top} th{background:#f6f8fa}
.error{color:#cf222e;font-weight:600} .warn{color:#9a6700;font-weight:600} .info{color:#57606a}
.kpi{display:inline-block;margin-right:2rem} .kpi b{font-size:1.4rem;display:block}
.note{background:#fff8c5;padding:.4rem .6rem;border:1px solid #d4a72c;display:inline-block}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(headers: list[str], rows: list[list[Any]], raw_cols: tuple[int, ...] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if i in raw_cols else _e(c)}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _kpi(label: str, value: Any) -> str:
    return f'<span class="kpi"><b>{_e(value)}</b>{_e(label)}</span>'


def render_html(report: DoctorReport, sections: dict[str, Any], gpu_map_png: bytes | None) -> str:
    """The doctor report as an HTML page; `sections` is the report as plain data."""
    parts = [f"<h1>kubegpu doctor</h1><div class='meta'>source {_e(report.source)}"
             f"{' · Kubernetes ' + _e(report.server_version) if report.server_version else ''}</div>"]
    status = sections.get("status")
    if status:
        t = status["totals"]
        parts.append("<h2>Status</h2>" + _kpi("nodes", t["nodes"]) + _kpi("GPU nodes", t["gpu_nodes"])
                     + _kpi("GPUs", t["gpus"]["total"]) + _kpi("allocated", t["gpus"]["allocated"])
                     + _kpi("free", t["gpus"]["free"]) + _kpi("allocation", f"{t['allocation_ratio']:.1%}"))
        rows = [[n["name"], n["pool"], n["gpu_model"] or "-", n["gpus"]["total"], n["gpus"]["allocated"],
                 n["gpus"]["free"], n["pods"]] for n in status["nodes"] if n["gpus"]["total"]]
        parts.append(_table(["node", "pool", "GPU model", "GPUs", "allocated", "free", "pods"], rows))
    frag = sections.get("fragmentation")
    if frag:
        parts.append("<h2>Fragmentation</h2>"
                     + _kpi("FGD fragmentation rate", f"{frag['fragmentation']['rate']:.1%}")
                     + "".join(_kpi(f"{k}-GPU pods fit now", v) for k, v in frag["fits_by_size"].items()))
        parts.append(_table(["size", "fits now", "stranded GPUs"],
                            [[k, frag["fits_by_size"].get(k), frag["stranded_by_size"].get(k)]
                             for k in frag["fits_by_size"]]))
        if gpu_map_png:
            data = base64.b64encode(gpu_map_png).decode()
            parts.append(f'<p><img alt="GPU map: each GPU node\'s devices, free / used / stranded" '
                         f'src="data:image/png;base64,{data}" style="max-width:100%"></p>')
    pending = sections.get("pending")
    if pending is not None:
        parts.append(f"<h2>Pending GPU pods ({len(pending)})</h2>")
        parts.append(_table(["pod", "kube-scheduler says", "first remedy"],
                            [[p["pod"], p["reason"], p["first_remedy"]] for p in pending]))
    plan = sections.get("defrag")
    if plan:
        parts.append("<h2>Defrag preview <span class='note'>not applied</span></h2>"
                     f"<p>{_e(plan.get('message', ''))}</p>")
        if plan.get("moves"):
            parts.append(_table(["pod", "from", "to", "GPU-hours lost"],
                                [[m["pod"], m["from"], m["to"], f"{m['gpu_hours']:.2f}"] for m in plan["moves"]]))
    audit = sections.get("audit")
    if audit:
        parts.append(f"<h2>Audit (score {audit['score']}/100)</h2>")
        rows = [[f"<span class='{_e(f['severity'])}'>{_e(f['severity'])}</span>", f["pitfall"], f["id"],
                 f["object"], f["message"], f["remediation"]] for f in audit["findings"]]
        parts.append(_table(["severity", "pitfall", "check", "object", "finding", "remediation"], rows,
                            raw_cols=(0,)))
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>kubegpu doctor</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def figure_png(fig) -> bytes:
    """A matplotlib Figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()
