"""The GPU map's categories: what an operator sees in `frag --plot` and `doctor -o html`."""

import numpy as np

from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
from kubegpu.fragmentation.plot import FREE, ISOLATED, USED, device_categories, frag_figure
from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import Documents, load_cluster


def demo_state(variant):
    docs = Documents(source=f"demo:{variant}")
    for obj in demo_objects(variant):
        docs.add(obj, "demo")
    return load_cluster(docs)


def test_demo_single_free_gpus_are_isolated_for_multi_gpu_pods():
    state = demo_state("pitfalls")
    cats = device_categories(cluster_placement(state), cluster_mix(state))
    gpu_rows = cats[(cats > 0).any(axis=1)]
    assert (gpu_rows == ISOLATED).sum() == 10 and (gpu_rows == FREE).sum() == 0
    assert (gpu_rows == USED).sum() == 70


def test_clean_demo_has_a_whole_free_node():
    state = demo_state("clean")
    placement = cluster_placement(state)
    cats = device_categories(placement, cluster_mix(state))
    assert np.any((cats == FREE).sum(axis=1) == 8)
    fig = frag_figure(placement, cluster_mix(state))
    assert "GPU nodes" in fig.axes[0].get_title()
