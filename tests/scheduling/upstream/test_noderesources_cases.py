"""NodeResourcesFit: upstream pkg/scheduler/framework/plugins/noderesources/fit_test.go.

Ported 53 Filter cases:
- TestEnoughRequests: 41 of 49 (init containers, overhead, extended / kubernetes.io / hugepages
  resources, zero requests, pod-level resources KEP-2837 with the PodLevelResources gate on, as it
  is by default since 1.34, and the DRAExtendedResource gate off). Skipped 8: 2 need
  NodeResourcesFitArgs (ignoredResources / ignoredResourceGroups, a non-default profile) and 6
  run with DRAExtendedResource on and DeviceClass objects (extended resources backed by DRA).
- TestNotEnoughRequests: 4 of 4 ("Too many pods").
- TestStorageRequests: 4 of 4.
- TestRestartableInitContainers: 4 of 6; skipped the 2 with the SidecarContainers gate off
  (GA, locked on).
Skipped whole tests: TestPreFilterDisabled (Filter without PreFilter state: Go plumbing), score,
event and queueing-hint tests. Upstream's node is makeAllocatableResources(10m cpu, 20 memory,
32 pods, 5 example.com/aaa, 20 ephemeral-storage, 5 hugepages-2Mi) with one existing pod.
"""

import pytest

from .cases import UNRESOLVABLE, UNSCHEDULABLE, container, node, plugin_status, pod, verdict

A, B = "example.com/aaa", "example.com/bbb"
KA, KB = "kubernetes.io/something", "subdomain.kubernetes.io/something"
DRA = "extended.resource.dra.io/something"
H = "hugepages-2Mi"


def alloc(cpu, mem, pods, ext_a, storage, huge):
    """upstream makeAllocatableResources: cpu in milli, the rest in plain units."""
    return {"cpu": f"{cpu}m", "memory": str(mem), "pods": str(pods), A: str(ext_a),
            "ephemeral-storage": str(storage), H: str(huge)}


def r(cpu=0, mem=0, storage=0, **scalars):
    """upstream framework.Resource as a container's requests (zero entries included, as upstream)."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(storage)}
    out.update({k: str(v) for k, v in scalars.items()})
    return out


def s(**named):
    """Scalar resources by short name: s(A=1) -> {'example.com/aaa': '1'}."""
    names = {"A": A, "B": B, "KA": KA, "KB": KB, "H": H, "DRA": DRA}
    return {names[k]: v for k, v in named.items()}


def rp(*usages, init=(), overhead=None, resources=None):
    """upstream newResourcePod / newResourceInitPod / newResourceOverheadPod / newPodLevelResourcesPod."""
    return pod(containers=[container(u, name=f"c{i}") for i, u in enumerate(usages)],
               init=[container(u, name=f"i{i}") for i, u in enumerate(init)], overhead=overhead,
               resources=resources)



NODE = alloc(10, 20, 32, 5, 20, 5)

ENOUGH = [
    ("no resources requested always fits", pod(), r(10, 20), ()),
    ("too many resources fails", rp(r(1, 1)), r(10, 20), (UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")),
    ("too many resources fails due to init container cpu", rp(r(1, 1), init=[r(3, 1)]), r(8, 19),
     (UNSCHEDULABLE, "Insufficient cpu")),
    ("too many resources fails due to highest init container cpu", rp(r(1, 1), init=[r(3, 1), r(2, 1)]), r(8, 19),
     (UNSCHEDULABLE, "Insufficient cpu")),
    ("too many resources fails due to init container memory", rp(r(1, 1), init=[r(1, 3)]), r(9, 19),
     (UNSCHEDULABLE, "Insufficient memory")),
    ("too many resources fails due to highest init container memory", rp(r(1, 1), init=[r(1, 3), r(1, 2)]),
     r(9, 19), (UNSCHEDULABLE, "Insufficient memory")),
    ("init container fits because it's the max, not sum, of containers and init containers",
     rp(r(1, 1), init=[r(1, 1)]), r(9, 19), ()),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     rp(r(1, 1), init=[r(1, 1), r(1, 1)]), r(9, 19), ()),
    ("both resources fit", rp(r(1, 1)), r(5, 5), ()),
    ("one resource memory fits", rp(r(2, 1)), r(9, 5), (UNSCHEDULABLE, "Insufficient cpu")),
    ("one resource cpu fits", rp(r(1, 2)), r(5, 19), (UNSCHEDULABLE, "Insufficient memory")),
    ("equal edge case", rp(r(5, 1)), r(5, 19), ()),
    ("equal edge case for init container", rp(r(4, 1), init=[r(5, 1)]), r(5, 19), ()),
    ("extended resource fits", rp(r(**s(A=1))), r(), ()),
    ("extended resource fits for init container", rp(init=[r(**s(A=1))]), r(), ()),
    ("extended resource capacity enforced", rp(r(1, 1, **s(A=10))), r(0, 0, **s(A=0)),
     (UNRESOLVABLE, f"Insufficient {A}")),
    ("extended resource capacity enforced for init container", rp(init=[r(1, 1, **s(A=10))]), r(0, 0, **s(A=0)),
     (UNRESOLVABLE, f"Insufficient {A}")),
    ("extended resource allocatable enforced", rp(r(1, 1, **s(A=1))), r(0, 0, **s(A=5)),
     (UNSCHEDULABLE, f"Insufficient {A}")),
    ("extended resource allocatable enforced for init container", rp(init=[r(1, 1, **s(A=1))]), r(0, 0, **s(A=5)),
     (UNSCHEDULABLE, f"Insufficient {A}")),
    ("extended resource allocatable enforced for multiple containers", rp(r(1, 1, **s(A=3)), r(1, 1, **s(A=3))),
     r(0, 0, **s(A=2)), (UNRESOLVABLE, f"Insufficient {A}")),
    ("extended resource allocatable admits multiple init containers",
     rp(init=[r(1, 1, **s(A=3)), r(1, 1, **s(A=3))]), r(0, 0, **s(A=2)), ()),
    ("extended resource allocatable enforced for multiple init containers",
     rp(init=[r(1, 1, **s(A=6)), r(1, 1, **s(A=3))]), r(0, 0, **s(A=2)), (UNRESOLVABLE, f"Insufficient {A}")),
    ("extended resource allocatable enforced for unknown resource", rp(r(1, 1, **s(B=1))), r(),
     (UNRESOLVABLE, f"Insufficient {B}")),
    ("extended resource allocatable enforced for unknown resource for init container", rp(init=[r(1, 1, **s(B=1))]),
     r(), (UNRESOLVABLE, f"Insufficient {B}")),
    ("kubernetes.io resource capacity enforced", rp(r(1, 1, **s(KA=10))), r(), (UNRESOLVABLE, f"Insufficient {KA}")),
    ("kubernetes.io resource capacity enforced for init container", rp(init=[r(1, 1, **s(KB=10))]), r(),
     (UNRESOLVABLE, f"Insufficient {KB}")),
    ("hugepages resource capacity enforced", rp(r(1, 1, **s(H=10))), r(0, 0, **s(H=0)),
     (UNRESOLVABLE, f"Insufficient {H}")),
    ("hugepages resource capacity enforced for init container", rp(init=[r(1, 1, **s(H=10))]), r(0, 0, **s(H=0)),
     (UNRESOLVABLE, f"Insufficient {H}")),
    ("hugepages resource allocatable enforced for multiple containers", rp(r(1, 1, **s(H=3)), r(1, 1, **s(H=3))),
     r(0, 0, **s(H=2)), (UNRESOLVABLE, f"Insufficient {H}")),
    ("resources + pod overhead fits", rp(r(1, 1), overhead={"cpu": "3m", "memory": "13"}), r(5, 5), ()),
    ("requests + overhead does not fit for memory", rp(r(1, 1), overhead={"cpu": "1m", "memory": "15"}), r(5, 5),
     (UNSCHEDULABLE, "Insufficient memory")),
    ("skip checking extended resource request with quantity zero via resource groups", rp(r(1, 1, **s(A=0))),
     r(0, 0, **s(A=6)), ()),
    ("skip checking resource request with quantity zero", rp(r(**s(A=1))), r(20, 30, **s(A=1)), ()),
    ("both pod-level and container-level resources fit",
     rp(r(1, 1), resources={"requests": {"cpu": "1m", "memory": "2"}}), r(5, 5), ()),
    ("pod-level cpu resource not fit", rp(r(1, 1), resources={"requests": {"cpu": "7m", "memory": "2"}}), r(5, 5),
     (UNSCHEDULABLE, "Insufficient cpu")),
    ("pod-level memory resource not fit", rp(r(1, 1), resources={"requests": {"cpu": "3m", "memory": "2"}}),
     r(5, 19), (UNSCHEDULABLE, "Insufficient memory")),
    ("pod-level hugepages resource fit", rp(resources={"requests": {"cpu": "3m", "memory": "2", H: "5"}}), None, ()),
    ("both pod-level and container-level hugepages resource fit",
     rp(r(1, 1, **s(H=3)), resources={"requests": {"cpu": "3m", "memory": "2", H: "5"}}), None, ()),
    ("pod-level hugepages resource not fit", rp(resources={"requests": {"cpu": "3m", "memory": "2", H: "10"}}), None,
     (UNRESOLVABLE, f"Insufficient {H}")),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     rp(r(1, 1), init=[r(1, 1)], resources={"requests": {"cpu": "3m", "memory": "2"}}), r(5, 19),
     (UNSCHEDULABLE, "Insufficient memory")),
    ("extended resource backed by DRA not enabled", rp(r(1, 1, **s(DRA=1))), r(),
     (UNRESOLVABLE, f"Insufficient {DRA}")),
]


# fit_test.go TestEnoughRequests (node: makeAllocatableResources(10, 20, 32, 5, 20, 5))
@pytest.mark.parametrize("pending,used,want", [pytest.param(*c[1:], id=c[0]) for c in ENOUGH])
def test_enough_requests(pending, used, want):
    existing = [rp(used)] if used is not None else []
    st = plugin_status("NodeResourcesFit", pending, [node(allocatable=NODE)], existing)
    assert verdict(st) == want


TOO_MANY = (UNSCHEDULABLE, "Too many pods")


# fit_test.go TestNotEnoughRequests (node: makeAllocatableResources(10, 20, 1, 0, 0, 0))
@pytest.mark.parametrize("pending,used,want", [
    pytest.param(pod(), r(10, 20), TOO_MANY,
                 id="even without specified resources, predicate fails when there's no space for additional pod"),
    pytest.param(rp(r(1, 1)), r(5, 5), TOO_MANY,
                 id="even if both resources fit, predicate fails when there's no space for additional pod"),
    pytest.param(rp(r(5, 1)), r(5, 19), TOO_MANY,
                 id="even for equal edge case, predicate fails when there's no space for additional pod"),
    pytest.param(rp(r(5, 1), init=[r(5, 1)]), r(5, 19), TOO_MANY,
                 id="even for equal edge case, predicate fails when there's no space for additional pod due to "
                    "init container"),
])
def test_not_enough_requests(pending, used, want):
    st = plugin_status("NodeResourcesFit", pending, [node(allocatable=alloc(10, 20, 1, 0, 0, 0))], [rp(used)])
    assert verdict(st) == want


# fit_test.go TestStorageRequests (node: makeAllocatableResources(10, 20, 32, 5, 20, 5))
@pytest.mark.parametrize("pending,used,want", [
    pytest.param(rp(r(1, 1)), r(2, 10), (), id="empty storage requested, and pod fits"),
    pytest.param(rp(r(storage=25)), r(2, 2), (UNRESOLVABLE, "Insufficient ephemeral-storage"),
                 id="storage ephemeral local storage request exceeds allocatable"),
    pytest.param(rp(r(storage=5)), r(2, 2, 10), (), id="ephemeral local storage is sufficient"),
    pytest.param(rp(r(storage=10)), r(2, 2), (), id="pod fits"),
])
def test_storage_requests(pending, used, want):
    st = plugin_status("NodeResourcesFit", pending, [node(allocatable=NODE)], [rp(used)])
    assert verdict(st) == want


def _sidecar_pod(request=None, sidecar=None):
    return pod(containers=[container(request, name="regular")],
               init=[container(sidecar, name="restartable-init", restart_policy="Always")])


# fit_test.go TestRestartableInitContainers (SidecarContainers on; node: makeAllocatableResources(2, 0, 1, 0, 0, 0))
@pytest.mark.parametrize("pending,want", [
    pytest.param(pod(containers=[container(name="regular")]), (),
                 id="allow pod without restartable init containers if sidecar containers is enabled"),
    pytest.param(_sidecar_pod(), (), id="allow pod with restartable init containers if sidecar containers is enabled"),
    pytest.param(_sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), (),
                 id="allow pod if the total requested resources do not exceed the node's allocatable resources"),
    pytest.param(_sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}), (UNRESOLVABLE, "Insufficient cpu"),
                 id="not allow pod if the total requested resources do exceed the node's allocatable resources"),
])
def test_restartable_init_containers(pending, want):
    st = plugin_status("NodeResourcesFit", pending, [node(allocatable=alloc(2, 0, 1, 0, 0, 0))])
    assert verdict(st) == want
