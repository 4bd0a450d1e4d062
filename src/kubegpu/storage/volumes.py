"""Where pods' volumes really live: network filesystems (NFS, CephFS, EFS...) or node-local disks.

A PVC names a StorageClass and is bound to a PV; the PV or the class's provisioner tells the
backend. Pitfalls 8-10 all start from this classification, so it lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from kubegpu.model.objects import PodSpec

NETWORK_FS_DRIVERS = ("nfs", "cephfs", "efs.csi.aws.com", "filestore.csi.storage.gke.io", "file.csi.azure.com",
                      "fsx.csi.aws.com", "lustre", "beegfs", "juicefs", "glusterfs", "weka", "gpfs",
                      "spectrumscale")
LOCAL_PROVISIONERS = ("kubernetes.io/no-provisioner", "rancher.io/local-path", "topolvm.io", "topolvm.cybozu.com",
                      "openebs.io/local", "local.csi.openebs.io", "zfs.csi.openebs.io", "lvm.csi.metal-stack.io",
                      "rawfile.csi.openebs.io", "local.csi.k8s.io", "hostpath.csi.k8s.io", "local-path")


def is_network_fs(driver: str) -> bool:
    d = driver.lower()
    return any(h in d for h in NETWORK_FS_DRIVERS)


def is_local_provisioner(provisioner: str) -> bool:
    p = provisioner.lower()
    return p in LOCAL_PROVISIONERS or any(p.startswith(x) or p.endswith(x) for x in LOCAL_PROVISIONERS)


@dataclass(frozen=True)
class VolumeBackend:
    """One shared volume: its key ('PersistentVolumeClaim/ns/name' or 'NFS/server:/path'), driver, options."""

    ref: str
    driver: str
    network_fs: bool
    shared: bool              # RWX / ROX, or an inline NFS volume
    mount_options: tuple[str, ...] = ()
    volume: str = ""          # the pod's volume name (set by spec_backends)


def pv_driver(pv: PersistentVolume) -> str:
    if pv.spec.nfs is not None:
        return "nfs"
    if pv.spec.cephfs is not None:
        return "cephfs"
    if pv.spec.csi is not None:
        return str(pv.spec.csi.get("driver", ""))
    if pv.spec.local is not None:
        return "local"
    if pv.spec.host_path is not None:
        return "hostPath"
    return ""


def claim_pv(state: ClusterState, pvc: PersistentVolumeClaim) -> PersistentVolume | None:
    if pvc.spec.volume_name:
        pv = state.get("PersistentVolume", None, pvc.spec.volume_name)
        if isinstance(pv, PersistentVolume):
            return pv
    for pv in state.of_kind("PersistentVolume"):
        ref = pv.spec.claim_ref
        if ref is not None and ref.name == pvc.name and (ref.namespace or "") == pvc.namespace:
            return pv
    return None


def claim_backend(state: ClusterState, pvc: PersistentVolumeClaim) -> VolumeBackend:
    pv = claim_pv(state, pvc)
    sc = state.get("StorageClass", None, pvc.spec.storage_class_name or "")
    driver = pv_driver(pv) if pv is not None else ""
    if not driver and isinstance(sc, StorageClass):
        driver = sc.provisioner
    options = tuple(pv.spec.mount_options) if pv is not None and pv.spec.mount_options else (
        tuple(sc.mount_options) if isinstance(sc, StorageClass) else ())
    modes = set(pvc.spec.access_modes) | set(pvc.status.access_modes)
    return VolumeBackend(ref=pvc.ref, driver=driver, network_fs=is_network_fs(driver),
                         shared=bool(modes & {"ReadWriteMany", "ReadOnlyMany"}), mount_options=options)


def spec_backends(state: ClusterState, spec: PodSpec, namespace: str) -> list[VolumeBackend]:
    """The persistent or network volumes of one pod spec."""
    out = []
    for vol in spec.volumes:
        if vol.persistent_volume_claim is not None:
            claim = vol.persistent_volume_claim.claim_name
            pvc = state.get("PersistentVolumeClaim", namespace, claim)
            if isinstance(pvc, PersistentVolumeClaim):
                out.append(replace(claim_backend(state, pvc), volume=vol.name))
            else:
                out.append(VolumeBackend(ref=f"PersistentVolumeClaim/{namespace}/{claim}", driver="",
                                         network_fs=False, shared=False, volume=vol.name))
        elif vol.nfs is not None:
            out.append(VolumeBackend(ref=f"NFS/{vol.nfs.server}:{vol.nfs.path}", driver="nfs", network_fs=True,
                                     shared=True, volume=vol.name))
        elif vol.cephfs is not None:
            out.append(VolumeBackend(ref=f"CephFS/{namespace}/{vol.name}", driver="cephfs", network_fs=True,
                                     shared=True, volume=vol.name))
    return out


def pod_backends(state: ClusterState, pod: Pod) -> list[VolumeBackend]:
    return spec_backends(state, pod.spec, pod.namespace)
