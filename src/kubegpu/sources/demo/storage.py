"""StorageClasses, volumes and claims: the shared NFS model store and the node-local NVMe.

Pitfall 8: one RWX NFS claim (mount options `soft`, no `nconnect`) behind 20 inference
replicas. Pitfall 10: a node-local StorageClass with `Immediate` binding and the GPU nodes'
NVMe left unused. Clean: the local class binds `WaitForFirstConsumer`, local PVs sit on the
NVMe; the NFS export stays for other readers but is mounted `hard,nconnect=8`.
"""

from __future__ import annotations

from datetime import datetime

from kubegpu.sources.demo.builders import ago, obj, rfc3339, uid_for
from kubegpu.sources.demo.nodes import TRAINING_NODES

NFS_SERVER = "10.0.200.10"
NFS_PATH = "/exports/models"
MODELS_PVC = "models-nfs"
LOCAL_CLASS = "local-nvme"


def storage_class(name: str, provisioner: str, *, binding: str, created: datetime, default: bool = False,
                  parameters: dict | None = None, reclaim: str = "Delete", expansion: bool | None = None,
                  mount_options: list[str] | None = None) -> dict:
    """A storage.k8s.io/v1 StorageClass."""
    ann = {"storageclass.kubernetes.io/is-default-class": "true"} if default else None
    sc = obj("storage.k8s.io/v1", "StorageClass", name, created=created, annotations=ann)
    sc.update(provisioner=provisioner, reclaimPolicy=reclaim, volumeBindingMode=binding)
    if parameters:
        sc["parameters"] = parameters
    if expansion is not None:
        sc["allowVolumeExpansion"] = expansion
    if mount_options:
        sc["mountOptions"] = mount_options
    return sc


def bound_claim(name: str, namespace: str, *, storage_class: str, size: str, access: str,
                created: datetime, source: dict, pv_name: str | None = None,
                mount_options: list[str] | None = None, provisioner: str | None = None,
                owner: dict | None = None) -> list[dict]:
    """A PersistentVolume and the claim bound to it, with the binder's annotations."""
    pvc_uid = uid_for("PersistentVolumeClaim", namespace, name)
    pv_name = pv_name or f"pvc-{pvc_uid}"
    pvc_ann = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
    if provisioner:
        pvc_ann["volume.beta.kubernetes.io/storage-provisioner"] = provisioner
        pvc_ann["volume.kubernetes.io/storage-provisioner"] = provisioner
    pvc = obj("v1", "PersistentVolumeClaim", name, namespace, created=created, annotations=pvc_ann,
              finalizers=["kubernetes.io/pvc-protection"], owner=owner)
    pvc["spec"] = {"accessModes": [access], "resources": {"requests": {"storage": size}},
                   "storageClassName": storage_class, "volumeMode": "Filesystem", "volumeName": pv_name}
    pvc["status"] = {"accessModes": [access], "capacity": {"storage": size}, "phase": "Bound"}
    pv_ann = {"pv.kubernetes.io/provisioned-by": provisioner} if provisioner else \
        {"pv.kubernetes.io/bound-by-controller": "yes"}
    pv = obj("v1", "PersistentVolume", pv_name, created=created, annotations=pv_ann,
             finalizers=["kubernetes.io/pv-protection"], owner=owner)
    pv["spec"] = {"accessModes": [access], "capacity": {"storage": size},
                  "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": name,
                               "namespace": namespace, "uid": pvc_uid},
                  "persistentVolumeReclaimPolicy": "Retain" if not provisioner else "Delete",
                  "storageClassName": storage_class, "volumeMode": "Filesystem", **source}
    if mount_options:
        pv["spec"]["mountOptions"] = list(mount_options)
    pv["status"] = {"lastPhaseTransitionTime": rfc3339(created), "phase": "Bound"}
    return [pv, pvc]


def nfs_mount_options(variant: str) -> list[str]:
    """`soft` (silent EIO on timeout) and one TCP connection vs `hard` with nconnect."""
    if variant == "pitfalls":
        return ["nfsvers=4.1", "soft", "timeo=100", "retrans=2"]
    return ["nfsvers=4.1", "hard", "nconnect=8", "timeo=600", "retrans=2", "noresvport"]


def models_nfs(variant: str) -> list[dict]:
    """The static NFS volume holding model weights (namespace inference)."""
    return bound_claim(MODELS_PVC, "inference", storage_class="", size="10Ti", access="ReadWriteMany",
                       created=ago(days=120), pv_name="models-nfs",
                       source={"nfs": {"server": NFS_SERVER, "path": NFS_PATH}},
                       mount_options=nfs_mount_options(variant))


def local_nvme_volume(node: str, created: datetime) -> dict:
    """A static local PV over a node's NVMe RAID-0, pinned to the node by nodeAffinity."""
    pv = obj("v1", "PersistentVolume", f"local-nvme-{node}", created=created,
             finalizers=["kubernetes.io/pv-protection"], labels={"kubernetes.io/hostname": node})
    pv["spec"] = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "7000Gi"},
                  "local": {"path": "/mnt/nvme"},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
                  "persistentVolumeReclaimPolicy": "Delete", "storageClassName": LOCAL_CLASS,
                  "volumeMode": "Filesystem"}
    pv["status"] = {"lastPhaseTransitionTime": rfc3339(created), "phase": "Available"}
    return pv


def storage_objects(variant: str) -> list[dict]:
    """StorageClasses, the NFS model store and the local NVMe volumes of the variant."""
    created = ago(days=200)
    objs = [
        storage_class("gp3", "ebs.csi.aws.com", binding="WaitForFirstConsumer", created=created, default=True,
                      parameters={"type": "gp3", "fsType": "ext4"}, expansion=True),
        storage_class("fsx-lustre", "fsx.csi.aws.com", binding="Immediate", created=created,
                      parameters={"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": "500"},
                      mount_options=["flock"]),
        storage_class(LOCAL_CLASS, "kubernetes.io/no-provisioner", created=ago(days=90),
                      binding="Immediate" if variant == "pitfalls" else "WaitForFirstConsumer"),
    ]
    objs += models_nfs(variant)
    if variant == "clean":
        # the training nodes' NVMe as static local PVs; the inference nodes' backs the KServe cache
        objs += [local_nvme_volume(n, ago(days=90)) for n in TRAINING_NODES]
    return objs
