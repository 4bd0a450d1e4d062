"""`Task.from_demand`: the one way a pod becomes a placement task (frag and the simulator's cluster source)."""

import pytest

from kubegpu.fragmentation.cluster import pod_task
from kubegpu.model.gpu import GpuDemand
from kubegpu.placement.task import Task
from kubegpu.simulate.cluster_source import cluster_overrides
from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import Documents, load_cluster


@pytest.mark.parametrize("demand, shape", [
    (GpuDemand(num_gpu=4, gpu_milli=1000), (4, 1000)),                 # whole devices
    (GpuDemand(num_gpu=1, gpu_milli=250), (1, 250)),                   # a time-sliced / shared pod
    (GpuDemand(), (0, 0)),                                             # CPU only
    (GpuDemand(num_gpu=2, gpu_milli=0), (0, 0)),                       # no milli on the device: no GPU task
    (GpuDemand(num_gpu=1, gpu_milli=1500), (1, 1000)),                 # capped at one device
])
def test_the_demand_becomes_devices_and_milli(demand, shape):
    t = Task.from_demand({"cpu": 1500, "memory": 2**30}, demand, "ns/p")
    assert (t.num_gpu, t.gpu_milli) == shape and (t.cpu_milli, t.mem_bytes, t.name) == (1500, 2**30, "ns/p")


def test_frag_and_the_simulators_cluster_source_make_the_same_task_of_a_running_pod():
    docs = Documents(source="demo:pitfalls")
    for obj in demo_objects("pitfalls"):
        docs.add(obj, "demo:pitfalls")
    state = load_cluster(docs)
    _, jobs = cluster_overrides(state)
    by_pod = {p.key: p for p in state.pods}
    assert jobs
    gpu_jobs = [j for j in jobs if j.task.wants_gpu]
    assert gpu_jobs
    for job in jobs:
        assert job.task == pod_task(state, by_pod[job.name]), job.name
