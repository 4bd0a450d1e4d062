"""The GPU map as a picture: one bordered cell per physical device, one row per GPU node.

Used devices are coloured by the owner's workload class (training, inference, other), darker for
higher priority; free devices are green, stranded ones red and hatched, free devices of cordoned
nodes grey. The legend lists only what the picture shows, and a footnote says that device
positions are packed (the API does not say which device index a pod holds). Data: `gpumap.gpu_map`.
Returns a matplotlib Figure (Agg); writing it is the caller's job.
"""

from __future__ import annotations

import io

from kubegpu.fragmentation.gpumap import FREE, PARTLY_USED, STRANDED, UNAVAILABLE, USED, GpuMap

# class -> colours from light (lowest priority present) to dark (highest)
CLASS_COLOURS = {"training": ["#9ecae1", "#4292c6", "#08519c"], "inference": ["#fdae6b", "#f16913", "#a63603"],
                 "other": ["#cbc9e2", "#9e9ac8", "#6a51a3"]}
STATE_STYLE = {FREE: ("#74c476", "", "free, usable"), STRANDED: ("#fcbba1", "xx", "free but stranded"),
               UNAVAILABLE: ("#d9d9d9", "//", "free, node cordoned"), PARTLY_USED: (None, "..", "partly used")}


def _priority_shades(gmap: GpuMap) -> dict[tuple[str, int], str]:
    """(class, priority) -> colour: priorities ranked within each class, darker is higher."""
    present: dict[str, set[int]] = {}
    for node in gmap.nodes:
        for d in node.devices:
            if d.workload_class is not None and d.priority is not None:
                present.setdefault(d.workload_class, set()).add(d.priority)
    out = {}
    for cls, prios in present.items():
        ranked = sorted(prios)
        shades = CLASS_COLOURS.get(cls, CLASS_COLOURS["other"])
        for r, p in enumerate(ranked):
            idx = len(shades) - 1 if len(ranked) == 1 else round(r * (len(shades) - 1) / (len(ranked) - 1))
            out[(cls, p)] = shades[idx]
    return out


def gpu_map_figure(gmap: GpuMap, *, max_nodes: int = 400):
    """The picture of `gmap` (the `max_nodes` nodes with most stranded GPU first when there are more)."""
    import matplotlib  # lazy: matplotlib costs start-up time and only --plot needs it

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    nodes = sorted(gmap.nodes, key=lambda n: (-float(n.stranded_gpus), n.name))[:max_nodes] \
        if len(gmap.nodes) > max_nodes else gmap.nodes
    width = max((len(n.devices) for n in nodes), default=1)
    label_chars = max((len(n.name) for n in nodes), default=4)
    fig = Figure(figsize=(2.2 + 0.075 * label_chars + 0.55 * width, 1.9 + 0.36 * max(len(nodes), 1)))
    ax = fig.add_subplot()
    shades = _priority_shades(gmap)
    legend: dict[str, Patch] = {}
    for row, node in enumerate(nodes):
        for d in node.devices:
            if d.state in (USED, PARTLY_USED) and d.workload_class is not None:
                colour = shades[(d.workload_class, d.priority)]
                hatch = ".." if d.state == PARTLY_USED else ""
                label = f"{d.workload_class}, priority {d.priority}"
                legend.setdefault(label, Patch(facecolor=colour, edgecolor="#333333", label=label))
            else:
                colour, hatch, label = STATE_STYLE.get(d.state, ("#bdbdbd", "", d.state))
                colour = colour or "#bdbdbd"
            if d.state in STATE_STYLE:
                style = STATE_STYLE[d.state]
                legend.setdefault(style[2], Patch(facecolor=style[0] or "#ffffff", hatch=style[1],
                                                  edgecolor="#333333", label=style[2]))
            ax.add_patch(Rectangle((d.index, row), 0.92, 0.84, facecolor=colour, edgecolor="#333333",
                                   linewidth=0.8, hatch=hatch))
    ax.set_xlim(-0.1, width)
    ax.set_ylim(max(len(nodes), 1) - 0.05, -0.1)
    ax.set_yticks([r + 0.42 for r in range(len(nodes))], [n.name for n in nodes], fontsize=8)
    ax.set_xticks([d + 0.46 for d in range(width)], [str(d) for d in range(width)], fontsize=8)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    shown = "" if len(nodes) == len(gmap.nodes) else f" ({len(nodes)} with the most stranded GPU shown)"
    ax.set_title(f"GPU map: {len(gmap.nodes)} GPU nodes{shown}, {gmap.free_gpus:g} free GPUs, "
                 f"{gmap.stranded_gpus:g} stranded for {gmap.reference_size}-GPU pods", fontsize=10)
    ax.legend(handles=list(legend.values()), loc="upper center", bbox_to_anchor=(0.5, -0.02),
              ncol=min(3, max(len(legend), 1)), fontsize=7, frameon=False)
    fig.text(0.01, 0.005, "Device positions are packed: the Kubernetes API does not say which device index "
             "a pod holds.", fontsize=6.5, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def figure_png(fig, dpi: int = 110) -> bytes:
    """A matplotlib Figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()
