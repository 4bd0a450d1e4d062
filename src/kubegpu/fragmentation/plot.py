"""A picture of a cluster's GPU devices: used, free and usable, free but stranded.

One row per GPU node, one cell per physical device. A free share is *stranded* when no GPU
shape of the workload mix could use it on that node now (too small, or the node lacks the CPU
or the GPU model for every shape that would fit) — the part of F_n(M) an operator can see.
Returns a matplotlib Figure (Agg); writing it is the caller's job.
"""

from __future__ import annotations

import numpy as np

from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.scheduling.placement.state import PlacementState

PADDING, USED, FREE, PARTLY_FREE, STRANDED, ISOLATED = range(6)
COLOURS = ["#ffffff", "#5b6770", "#2ca02c", "#98df8a", "#d62728", "#ff9f1c"]
LABELS = ["", "allocated", "free", "partly used, rest usable", "free but stranded",
          "free, too few on the node for the mix's multi-GPU pods"]


def device_categories(state: PlacementState, mix: ShapeMix) -> np.ndarray:
    """int[n, D]: the category of every device cell (constants above)."""
    access = mix.access(state.gpu_model, state.gpu_models) & mix.is_gpu[None, :]
    cpu_ok = state.cpu_free[:, None] >= mix.cpu_milli[None, :]
    usable_shape = access & cpu_ok                                             # [n, m]
    # the smallest per-device share any usable shape asks on each node (inf if none)
    share = np.where(usable_shape, mix.gpu_milli[None, :], np.iinfo(np.int32).max).min(axis=1)
    free, total = state.dev_free, state.dev_total
    out = np.full(free.shape, PADDING, dtype=np.int8)
    out[(total > 0) & (free == 0)] = USED
    has_free = (total > 0) & (free > 0)
    usable = has_free & (free >= share[:, None])
    out[usable & (free == total)] = FREE
    out[usable & (free < total)] = PARTLY_FREE
    out[has_free & ~usable] = STRANDED
    # whole free devices that no multi-GPU shape of the mix can use: fewer on the node than the
    # smallest multi-GPU request (the demo's "87% allocated, no 2-GPU pod fits")
    multi = mix.num_gpu[mix.is_gpu & (mix.num_gpu >= 2)]
    if multi.size:
        whole_free = ((total > 0) & (free == total)).sum(axis=1)
        lonely = (whole_free > 0) & (whole_free < int(multi.min()))
        out[(out == FREE) & lonely[:, None]] = ISOLATED
    return out


def frag_figure(state: PlacementState, mix: ShapeMix, *, max_nodes: int = 400):
    """The device map of the GPU nodes (the `max_nodes` most fragmented first when there are more)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    cats = device_categories(state, mix)
    gpu_nodes = np.flatnonzero(state.gpu_count > 0)
    stranded = (cats == STRANDED).sum(axis=1)
    order = gpu_nodes[np.lexsort((gpu_nodes, -stranded[gpu_nodes]))][:max_nodes]
    grid = cats[order][:, : max(int(state.gpu_count.max(initial=1)), 1)]
    height = min(2 + 0.18 * len(order), 60)
    fig = Figure(figsize=(2 + 0.5 * grid.shape[1], height))
    ax = fig.add_subplot()
    ax.imshow(grid if grid.size else np.zeros((1, 1)), cmap=ListedColormap(COLOURS), vmin=0, vmax=len(COLOURS) - 1,
              aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(order)), [state.names[i] for i in order], fontsize=6)
    ax.set_xticks(range(grid.shape[1]), [str(d) for d in range(grid.shape[1])])
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("GPU device")
    ax.set_title(f"GPU devices of {len(gpu_nodes)} GPU nodes: {int((cats == STRANDED).sum())} stranded, "
                 f"{int((cats == ISOLATED).sum())} free but isolated", fontsize=9)
    ax.legend(handles=[Patch(color=COLOURS[c], label=LABELS[c])
                       for c in (USED, FREE, PARTLY_FREE, STRANDED, ISOLATED)],
              loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, fontsize=7)
    fig.tight_layout()
    return fig
