"""GPU fragmentation: the FGD measure (USENIX ATC '23), task-shape mixes, k-GPU capacity, the frag report.

    mix = mix_from_tasks(tasks)                 # or load_mix("mix.json")
    report = frag_report(PlacementState.from_node_table(table), mix)
"""

from kubegpu.fragmentation.capacity import fits_by_size, stranded_by_size
from kubegpu.fragmentation.measure import Fragmentation, cluster_fragmentation, node_fragmentation
from kubegpu.fragmentation.report import FragReport, frag_report
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, load_mix, mix_from_tasks

__all__ = ["FragReport", "Fragmentation", "ShapeMix", "TaskShape", "cluster_fragmentation", "fits_by_size",
           "frag_report", "load_mix", "mix_from_tasks", "node_fragmentation", "stranded_by_size"]
