"""The GPU map: its data (`gpumap.gpu_map`) and its picture (`frag --plot`, `doctor -o html`)."""

import io

import numpy as np
import pytest

from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_mix
from kubegpu.fragmentation.gpumap import FREE, STRANDED, USED, gpu_map
from kubegpu.fragmentation.plot import figure_png, gpu_map_figure
from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import Documents, load_cluster


def demo_state(variant):
    docs = Documents(source=f"demo:{variant}")
    for obj in demo_objects(variant):
        docs.add(obj, "demo")
    return load_cluster(docs)


def demo_map(variant):
    state = demo_state(variant)
    report = cluster_frag_report(state)
    return state, report, gpu_map(state, report, cluster_mix(state))


def states(gmap):
    return [d.state for n in gmap.nodes for d in n.devices]


def test_demo_single_free_gpus_are_stranded_for_the_largest_demand_size():
    _, report, gmap = demo_map("pitfalls")
    assert gmap.reference_size == 4
    assert states(gmap).count(STRANDED) == 10 and states(gmap).count(FREE) == 0
    assert states(gmap).count(USED) == 70
    # "stranded" on the map is the same number as in the frag table
    assert gmap.stranded_gpus == report.stranded_by_size["4"] == 10


def test_map_owners_carry_workload_class_and_priority():
    _, _, gmap = demo_map("pitfalls")
    used = [d for n in gmap.nodes for d in n.devices if d.state == USED]
    assert {d.workload_class for d in used} >= {"training", "inference"}
    assert all(d.pod and d.priority is not None for d in used)
    # a whole-GPU pod holding k GPUs owns k cells of its node
    by_pod = {}
    for n in gmap.nodes:
        for d in n.devices:
            if d.pod:
                by_pod.setdefault(d.pod, set()).add(n.name)
    assert all(len(nodes) == 1 for nodes in by_pod.values())


def test_clean_demo_has_a_whole_free_node_and_fewer_stranded():
    _, report, gmap = demo_map("clean")
    assert any(all(d.state == FREE for d in n.devices) for n in gmap.nodes)
    assert gmap.stranded_gpus == report.stranded_by_size[str(gmap.reference_size)]
    assert gmap.stranded_gpus < 10


def _pixels(png: bytes) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")


@pytest.mark.parametrize("variant", ["pitfalls", "clean"])
def test_gpu_map_png_is_not_blank_and_legend_lists_only_present_entries(variant):
    _, _, gmap = demo_map(variant)
    fig = gpu_map_figure(gmap)
    pixels = _pixels(figure_png(fig))
    assert pixels.shape[0] > 200 and pixels.shape[1] > 300
    assert float(pixels[..., :3].std()) > 0.05           # not a blank canvas
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "free, node cordoned" not in labels           # the demo cordons no GPU node
    assert ("free but stranded" in labels) == (gmap.stranded_gpus > 0 and any(
        d.state == STRANDED for n in gmap.nodes for d in n.devices))
    assert ("free, usable" in labels) == any(d.state == FREE for n in gmap.nodes for d in n.devices)
    assert len(labels) == len(set(labels))
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == [n.name for n in gmap.nodes]


def test_a_large_map_says_how_many_nodes_it_shows():
    _, _, gmap = demo_map("pitfalls")
    fig = gpu_map_figure(gmap, max_nodes=4)
    title = fig.axes[0].get_title()
    assert "10 GPU nodes (4 with the most stranded GPU shown)" in title
    assert len(fig.axes[0].get_yticklabels()) == 4


@pytest.mark.parametrize("variant", ["pitfalls", "clean"])
def test_map_owners_are_the_node_tables_packing(variant):
    """Each device's owners hold exactly its used_milli (one packing: NodeTable.pod_devices)."""
    from kubegpu.model.nodetable import NodeTable

    state = demo_state(variant)
    table = NodeTable.from_cluster(state)
    gmap = gpu_map(state, cluster_frag_report(state), cluster_mix(state), table=table)
    checked = 0
    for n in gmap.nodes:
        for d in n.devices:
            held = sum(int(table.pod_devices[p][d.index]) for p in d.pods)
            assert held == d.used_milli, (n.name, d.index, d.pods)
            assert (d.pod is None) == (not d.pods) and (d.pod is None or d.pod == d.pods[0])
            checked += bool(d.pods)
    assert checked > 10
