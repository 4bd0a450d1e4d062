"""VolumeBinding: upstream pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go TestVolumeBinding.

Ported 14 of 14 PreFilter+Filter cases (the score columns are not Filter behaviour). The binder's
own FindPodVolumes tables (binder_test.go) are in test_volumebinding_binder_cases.py.
"""

import pytest

from ..upstream.cases import UNRESOLVABLE
from .runner import node, plugin_verdicts, pod, pv, pvc, pvc_volume, storage_class

HOSTNAME, REGION, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/region", "topology.kubernetes.io/zone"
CLASSES = [storage_class("immediate-sc", mode="Immediate"), storage_class("wait-sc", mode="WaitForFirstConsumer"),
           storage_class("wait-hdd-sc", mode="WaitForFirstConsumer")]
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND = (UNRESOLVABLE, "node(s) didn't find available persistent volumes to bind")


def make_node(name, **labels):
    """upstream makeNode: the hostname label is always set."""
    return node(name, {HOSTNAME: name, **labels})


def make_pod(*claims):
    return pod("pod-a", volumes=[pvc_volume(c, "") for c in claims])


def local_pv(name, sc, cap, host):
    return pv(name, sc=sc, phase="Available", capacity=cap, affinity={HOSTNAME: [host]})


def zonal_pv(name, cap, zone):
    return pv(name, sc="wait-sc", phase="Available", capacity=cap,
              affinity={REGION: [f"region-{zone}"], ZONE: [f"zone-{zone}"]})


ZONAL_NODES = [make_node(f"zone-{z}-node-{x}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"})
               for z in "abc" for x in "ab"]
ZONAL_PVS = [zonal_pv("pv-a-0", "200Gi", "a"), zonal_pv("pv-a-1", "200Gi", "a"),
             zonal_pv("pv-b-0", "100Gi", "b"), zonal_pv("pv-b-1", "100Gi", "b")]
ABC = [make_node("node-a"), make_node("node-b"), make_node("node-c")]
LOCAL_PVS = [local_pv("pv-a-0", "wait-sc", "200Gi", "node-a"), local_pv("pv-a-1", "wait-sc", "200Gi", "node-a"),
             local_pv("pv-b-0", "wait-sc", "100Gi", "node-b"), local_pv("pv-b-1", "wait-sc", "100Gi", "node-b")]
LOCAL_HDD_PVS = [local_pv("pv-a-2", "wait-hdd-sc", "200Gi", "node-a"),
                 local_pv("pv-a-3", "wait-hdd-sc", "200Gi", "node-a"),
                 local_pv("pv-b-2", "wait-hdd-sc", "100Gi", "node-b"),
                 local_pv("pv-b-3", "wait-hdd-sc", "100Gi", "node-b")]


def case(name, mine, nodes, objects, want):
    return pytest.param(mine, nodes, objects, want, id=f"TestVolumeBinding/{name}")


CASES = [
    case("pod has not pvcs", pod("pod-a"), [make_node("node-a")], [], [()]),
    case("all bound", make_pod("pvc-a"), [make_node("node-a")],
         [pvc("pvc-a", sc="wait-sc", volume="pv-a", bound=True), pv("pv-a", sc="wait-sc", phase="Available")], [()]),
    case("PVC does not exist", make_pod("pvc-a"), [make_node("node-a")], [],
         [(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found')]),
    case("Part of PVCs do not exist", make_pod("pvc-a", "pvc-b"), [make_node("node-a")],
         [pvc("pvc-a", sc="wait-sc", volume="pv-a", bound=True)],
         [(UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found')]),
    case("immediate claims not bound", make_pod("pvc-a"), [make_node("node-a")], [pvc("pvc-a", sc="immediate-sc")],
         [(UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")]),
    case("unbound claims no matches", make_pod("pvc-a"), [make_node("node-a")], [pvc("pvc-a", sc="wait-sc")],
         [BIND]),
    case("bound and unbound unsatisfied", make_pod("pvc-a", "pvc-b"), [make_node("node-a", foo="barbar")],
         [pvc("pvc-a", sc="wait-sc", volume="pv-a", bound=True), pvc("pvc-b", sc="wait-sc"),
          pv("pv-a", sc="wait-sc", phase="Available", affinity={"foo": ["bar"]})],
         [(UNRESOLVABLE, NODE_CONFLICT, BIND[1])]),
    case("pvc not found", make_pod("pvc-a"), [make_node("node-a")], [],
         [(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found')]),
    case("pv not found", make_pod("pvc-a"), [make_node("node-a")],
         [pvc("pvc-a", sc="wait-sc", volume="pv-a", bound=True)],
         [(UNRESOLVABLE, "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")]),
    case("pv not found claim lost", make_pod("pvc-a"), [make_node("node-a")],
         [pvc("pvc-a", sc="wait-sc", volume="pv-a", bound=True, phase="Lost")],
         [(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"')]),
    case("local volumes with close capacity are preferred", make_pod("pvc-a"), ABC,
         [pvc("pvc-a", sc="wait-sc", request="50Gi"), *LOCAL_PVS], [(), (), BIND]),
    case("local volumes with close capacity are preferred (multiple pvcs)", make_pod("pvc-0", "pvc-1"), ABC,
         [pvc("pvc-0", sc="wait-sc", request="50Gi"), pvc("pvc-1", sc="wait-hdd-sc", request="100Gi"),
          *LOCAL_PVS, *LOCAL_HDD_PVS], [(), (), BIND]),
    case("zonal volumes with close capacity are preferred", make_pod("pvc-a"), ZONAL_NODES,
         [pvc("pvc-a", sc="wait-sc", request="50Gi"), *ZONAL_PVS], [(), (), (), (), BIND, BIND]),
    case("zonal volumes with close capacity are preferred (custom shape)", make_pod("pvc-a"), ZONAL_NODES,
         [pvc("pvc-a", sc="wait-sc", request="50Gi"), *ZONAL_PVS], [(), (), (), (), BIND, BIND]),
]


@pytest.mark.parametrize("mine,nodes,objects,want", CASES)
def test_volume_binding(mine, nodes, objects, want):
    assert plugin_verdicts("VolumeBinding", mine, nodes, objects=[*CLASSES, *objects]) == want
