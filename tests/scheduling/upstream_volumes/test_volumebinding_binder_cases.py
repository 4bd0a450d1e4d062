"""VolumeBinding's binder: upstream pkg/scheduler/framework/plugins/volumebinding/binder_test.go.

The FindPodVolumes tables, read through the plugin: a scenario's conflict reasons are the Filter
status on node1; `shouldFail` (GetPodVolumes failing, or unbound immediate claims) is the
PreFilter rejection, with the message the plugin's PreFilter (podHasPVCs) gives.

Ported 33 of 33 scenarios: TestFindPodVolumesWithoutProvisioning 21,
TestFindPodVolumesWithProvisioning 8, TestFindPodVolumesWithCSIMigration 4 — each in upstream's
"without CSIStorageCapacity / no CSIDriver" run only: kubegpu does not model CSIDriver or
CSIStorageCapacity, so the capacity-tracking variants (NotEnoughSpace) are not ported. The
Assume / Bind / Revert / CheckBindings tables act after Filter.
"""

import pytest

from ..upstream.cases import UNRESOLVABLE
from .runner import csinode, node, plugin_verdict, pod, pv, pvc, pvc_volume, storage_class

NS, KEY = "testns", "nodeKey"
NODE_CONFLICT = (UNRESOLVABLE, "node(s) didn't match PersistentVolume's node affinity")
BIND = (UNRESOLVABLE, "node(s) didn't find available persistent volumes to bind")
PV_MISSING = (UNRESOLVABLE, "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")
IMMEDIATE = (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")
WAIT, IMMEDIATE_CLASS, PROVISIONED, TOPO_MISMATCH = "waitClass", "immediateClass", "waitClassWithProvisioner", \
    "topoMismatchClass"
CLASSES = [
    storage_class(PROVISIONED, mode="WaitForFirstConsumer", provisioner="test-provisioner",
                  topologies=[{KEY: ["node1", "reference-value"]}]),
    storage_class(IMMEDIATE_CLASS, mode="Immediate"),
    storage_class(WAIT, mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"),
    storage_class(TOPO_MISMATCH, mode="WaitForFirstConsumer", provisioner="test-provisioner",
                  topologies=[{KEY: ["reference-value"]}]),
]


def test_pvc(name, size, state, pv_name, cls, selected=""):
    """upstream makeTestPVC: state is unbound / prebound / bound / selected-node."""
    ann = {"volume.kubernetes.io/selected-node": selected} if state == "selected" else {}
    doc = pvc(name, ns=NS, sc=cls, request=size, volume=pv_name if state in ("prebound", "bound") else None,
              bound=state == "bound", annotations=ann)
    doc["metadata"]["uid"] = "pvc-uid"
    doc["spec"]["volumeMode"] = "Filesystem"
    return doc


def test_pv(name, node_name, capacity, bound_to, cls, **extra):
    """upstream makeTestPV: Available, node affinity nodeKey In [node], claimRef to `bound_to`."""
    ref = ({"kind": "PersistentVolumeClaim", "name": bound_to["metadata"]["name"], "namespace": NS,
            "uid": "pvc-uid"} if bound_to else None)
    return pv(name, sc=cls, phase="Available", capacity=capacity, affinity={KEY: [node_name]} if node_name else None,
              claim_ref=ref, volumeMode="Filesystem", **extra)


test_pvc.__test__ = test_pv.__test__ = False  # builders, not tests

unbound = test_pvc("unbound-pvc", "1G", "unbound", "", WAIT)
unbound2 = test_pvc("unbound-pvc2", "5G", "unbound", "", WAIT)
prebound = test_pvc("prebound-pvc", "1G", "prebound", "pv-node1a", WAIT)
bound = test_pvc("bound-pvc", "1G", "bound", "pv-bound", WAIT)
immediate_unbound = test_pvc("immediate-unbound-pvc", "1G", "unbound", "", IMMEDIATE_CLASS)
immediate_bound = test_pvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", IMMEDIATE_CLASS)
provisioned = test_pvc("provisioned-pvc", "1Gi", "unbound", "", PROVISIONED)
no_provisioner = test_pvc("no-provisioner-pvc", "1Gi", "unbound", "", WAIT)
topo_mismatch = test_pvc("topo-mismatch-pvc", "1Gi", "unbound", "", TOPO_MISMATCH)
selected_node = test_pvc("provisioned-pvc", "1Gi", "selected", "", PROVISIONED, selected="node1")
bound_migration = test_pvc("pvc-migration-bound", "1G", "bound", "pv-migration-bound", WAIT)
generic = test_pvc("test-pod-test-volume", "1G", "bound", "pv-bound", IMMEDIATE_CLASS)
generic_owned = {**generic, "metadata": {**generic["metadata"], "ownerReferences": [
    {"apiVersion": "v1", "kind": "Pod", "name": "test-pod", "uid": "", "controller": True}]}}

pv_node1a = test_pv("pv-node1a", "node1", "5G", None, WAIT)
pv_node1b = test_pv("pv-node1b", "node1", "10G", None, WAIT)
pv_node2 = test_pv("pv-node2", "node2", "1G", None, WAIT)
pv_bound = test_pv("pv-bound", "node1", "1G", bound, WAIT)
pv_node1a_bound = test_pv("pv-node1a", "node1", "5G", unbound, WAIT)
pv_bound_immediate = test_pv("pv-bound-immediate", "node1", "1G", immediate_bound, IMMEDIATE_CLASS)
pv_bound_immediate_node2 = test_pv("pv-bound-immediate", "node2", "1G", immediate_bound, IMMEDIATE_CLASS)
pv_bound_generic = test_pv("pv-bound", "node1", "1G", generic, WAIT)
ZONE1 = {"failure-domain.beta.kubernetes.io/zone": "us-east-1",
         "failure-domain.beta.kubernetes.io/region": "us-east-1a"}
migration_pv = {**test_pv("pv-migration-bound", None, "1G", bound_migration, WAIT,
                          gcePersistentDisk={"pdName": "test-disk", "fsType": "ext4"}),
                "metadata": {"name": "pv-migration-bound", "labels": ZONE1}}

NODE1 = node("node1", {KEY: "node1"})
NODE1_ZONE1 = node("node1", {"topology.gke.io/zone": "us-east-1"})
NODE1_ZONE2 = node("node1", {"topology.gke.io/zone": "us-east-2"})
MIGRATED = csinode("node1", {}, {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"})
NOT_MIGRATED = csinode("node1", {}, {"storage.alpha.kubernetes.io/migrated-plugins": ""})


def claims_pod(*claims):
    return pod("test-pod", ns=NS, uid="", volumes=[pvc_volume(c["metadata"]["name"], f"vol{i}")
                                                   for i, c in enumerate(claims)])


def ephemeral_pod(volume):
    return pod("test-pod", ns=NS, uid="", volumes=[{"name": volume, "ephemeral": {}}])


def case(test, name, mine, objects, want, on=NODE1):
    return pytest.param(mine, objects, on, want, id=f"{test}/{name}")


def scenario(test, name, claims, pvs=(), want=(), *, cached=None, mine=None, extra=(), on=NODE1):
    objects = [*(claims if cached is None else cached), *pvs, *extra]
    return case(test, name, mine or claims_pod(*claims), objects, want, on)


NO_PROV, PROV, MIG = ("TestFindPodVolumesWithoutProvisioning", "TestFindPodVolumesWithProvisioning",
                      "TestFindPodVolumesWithCSIMigration")
CASES = [
    scenario(NO_PROV, "no-volumes", [], mine=pod("test-pod", ns=NS)),
    scenario(NO_PROV, "no-pvcs", [], mine=pod("test-pod", ns=NS, volumes=[{"name": "e", "emptyDir": {}}])),
    scenario(NO_PROV, "pvc-not-found", [bound], cached=[],
             want=(UNRESOLVABLE, 'persistentvolumeclaim "bound-pvc" not found')),
    scenario(NO_PROV, "bound-pvc", [bound], [pv_bound]),
    scenario(NO_PROV, "bound-pvc,pv-not-exists", [bound], want=PV_MISSING),
    scenario(NO_PROV, "prebound-pvc", [prebound], [pv_node1a_bound], want=IMMEDIATE),
    scenario(NO_PROV, "unbound-pvc,pv-same-node", [unbound], [pv_node2, pv_node1a, pv_node1b]),
    scenario(NO_PROV, "unbound-pvc,pv-different-node", [unbound], [pv_node2], want=BIND),
    scenario(NO_PROV, "two-unbound-pvcs", [unbound, unbound2], [pv_node1a, pv_node1b]),
    scenario(NO_PROV, "two-unbound-pvcs,order-by-size", [unbound2, unbound], [pv_node1a, pv_node1b]),
    scenario(NO_PROV, "two-unbound-pvcs,partial-match", [unbound, unbound2], [pv_node1a], want=BIND),
    scenario(NO_PROV, "one-bound,one-unbound", [unbound, bound], [pv_bound, pv_node1a]),
    scenario(NO_PROV, "one-bound,one-unbound,no-match", [unbound, bound], [pv_bound, pv_node2], want=BIND),
    scenario(NO_PROV, "one-prebound,one-unbound", [unbound, prebound], [pv_node1a, pv_node1b], want=IMMEDIATE),
    scenario(NO_PROV, "immediate-bound-pvc", [immediate_bound], [pv_bound_immediate]),
    scenario(NO_PROV, "immediate-bound-pvc-wrong-node", [immediate_bound], [pv_bound_immediate_node2],
             want=NODE_CONFLICT),
    scenario(NO_PROV, "immediate-unbound-pvc", [immediate_unbound], want=IMMEDIATE),
    scenario(NO_PROV, "immediate-unbound-pvc,delayed-mode-bound", [immediate_unbound, bound], [pv_bound],
             want=IMMEDIATE),
    scenario(NO_PROV, "immediate-unbound-pvc,delayed-mode-unbound", [immediate_unbound, unbound], want=IMMEDIATE),
    scenario(NO_PROV, "generic-ephemeral,no-pvc", [], mine=ephemeral_pod("no-such-pvc"),
             want=(UNRESOLVABLE, 'waiting for ephemeral volume controller to create the persistentvolumeclaim '
                                 '"test-pod-no-such-pvc"')),
    scenario(NO_PROV, "generic-ephemeral,with-pvc", [], [pv_bound_generic], mine=ephemeral_pod("test-volume"),
             extra=[generic_owned]),
    scenario(NO_PROV, "generic-ephemeral,wrong-pvc", [], [pv_bound_generic], mine=ephemeral_pod("test-volume"),
             extra=[generic], want=(UNRESOLVABLE, "PVC testns/test-pod-test-volume was not created for pod "
                                                  "testns/test-pod (pod is not owner)")),
    scenario(PROV, "one-provisioned", [provisioned]),
    scenario(PROV, "two-unbound-pvcs,one-matched,one-provisioned", [unbound, provisioned], [pv_node1a]),
    scenario(PROV, "one-bound,one-provisioned", [bound, provisioned], [pv_bound]),
    scenario(PROV, "one-binding,one-selected-node", [bound, selected_node], [pv_bound]),
    scenario(PROV, "immediate-unbound-pvc", [immediate_unbound], want=IMMEDIATE),
    scenario(PROV, "one-immediate-bound,one-provisioned", [immediate_bound, provisioned], [pv_bound_immediate]),
    scenario(PROV, "invalid-provisioner", [no_provisioner], want=BIND),
    scenario(PROV, "volume-topology-unsatisfied", [topo_mismatch], want=BIND),
    scenario(MIG, "pvc-bound", [bound_migration], [migration_pv], extra=[MIGRATED], on=NODE1_ZONE1),
    scenario(MIG, "pvc-bound,csinode-not-migrated", [bound_migration], [migration_pv], extra=[NOT_MIGRATED],
             on=NODE1_ZONE1),
    scenario(MIG, "pvc-bound,missing-csinode", [bound_migration], [migration_pv], on=NODE1_ZONE1),
    scenario(MIG, "pvc-bound,node-different-zone", [bound_migration], [migration_pv], extra=[MIGRATED],
             on=NODE1_ZONE2, want=NODE_CONFLICT),
]


@pytest.mark.parametrize("mine,objects,on,want", CASES)
def test_find_pod_volumes(mine, objects, on, want):
    assert plugin_verdict("VolumeBinding", mine, [on], objects=[*CLASSES, *objects]) == want


def test_selected_node_claim_fails_on_other_nodes():
    """binder.go FindPodVolumes: a claim selected for another node fails the node (fast path);
    not an upstream table case, it completes one-binding,one-selected-node for node2."""
    got = plugin_verdict("VolumeBinding", claims_pod(bound, selected_node), [node("node2", {KEY: "node2"})],
                         objects=[*CLASSES, bound, selected_node, test_pv("pv-bound", None, "1G", bound, WAIT)])
    assert got == BIND
