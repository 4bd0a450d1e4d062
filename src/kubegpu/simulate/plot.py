"""The run timeline as a PNG: nodes per group, pending pods, running GPUs and cumulative cost."""

from __future__ import annotations

import io

import numpy as np

from kubegpu.simulate.billing import Billing


def timeline_png(engine) -> bytes:
    import matplotlib  # lazy: matplotlib costs start-up time and only a --plot needs it

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    samples = engine.stats.samples
    hours = np.array([s[0] for s in samples]) / 3600.0
    fig = Figure(figsize=(9, 8))
    axes = fig.subplots(4, 1, sharex=True)
    for i, g in enumerate(engine.cluster.groups):
        axes[0].step(hours, [s[1][i] for s in samples], where="post", label=g.name)
    axes[0].set_ylabel("nodes")
    axes[0].legend(fontsize=8, loc="upper left")
    axes[1].step(hours, [s[2] for s in samples], where="post", color="tab:red")
    axes[1].set_ylabel("pending pods")
    axes[2].step(hours, [s[3] for s in samples], where="post", color="tab:green")
    axes[2].set_ylabel("running GPUs")
    sc = engine.scenario
    billing = Billing.from_spec(sc.spec.billing, where=sc.source)
    prices = {g.name: g.spec.price_per_hour for g in engine.cluster.groups}
    cost = [sum(billing.node_cost(r, prices[r.group], engine.end, upto=t)[1] for r in engine.cluster.records)
            for t in hours * 3600.0]
    axes[3].plot(hours, cost, color="tab:purple")
    axes[3].set_ylabel(f"cost ({billing.currency})")
    axes[3].set_xlabel("simulated time (h)")
    fig.suptitle(f"{sc.name} (seed {sc.spec.seed})")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()
