"""The check catalog: every audit check's ID, pitfall, title, default severity, rationale,
remediation and tunable parameters, as data.

IDs are stable (`KG-<pitfall><nn>`): tests, suppressions (`kubegpu.io/ignore: KG-101,KG-202`)
and CI baselines rely on them. The functions that implement the checks are registered under the
same IDs in `kubegpu.audit.checks.REGISTRY`; a test keeps the two in step, and
`docs/audit-checks.md` is generated from this table.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubegpu.audit.findings import Severity

PITFALLS: dict[int, str] = {
    1: "GPU fragmentation",
    2: "Pending GPU pods",
    3: "Autoscaler churn on GPU nodes",
    4: "Preemption of training by inference",
    5: "NCCL network path",
    6: "Load-balanced Services in front of distributed pods",
    7: "DNS under load",
    8: "Shared-filesystem model mounts",
    9: "No local model cache",
    10: "Local disks and IO wait",
}


class CheckInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    pitfall: int
    title: str
    severity: str
    rationale: str
    remediation: str
    params: dict[str, Any] = {}

    @property
    def level(self) -> Severity:
        return Severity.parse(self.severity)


CATALOG: tuple[CheckInfo, ...] = (
    # ------------------------------------------------------------------ 1 fragmentation
    CheckInfo(
        id="KG-101", pitfall=1, severity="warn",
        title="Free GPUs are stranded: GPU pods do not fit although enough GPUs are free",
        rationale="Free GPUs scattered one or two per node cannot host a pod that needs k GPUs on one node; "
                  "the cluster looks half-empty while multi-GPU pods stay Pending.",
        remediation="Pack GPU pods (MostAllocated / bin-packing scoring for nvidia.com/gpu), move small pods off "
                    "partly used nodes (`kubegpu defrag`), and keep whole nodes free for multi-GPU shapes.",
        params={"typical_min_share": 0.1}),
    CheckInfo(
        id="KG-102", pitfall=1, severity="warn",
        title="Small inference pods hold whole GPUs where time-slicing would free GPUs",
        rationale="A small model server rarely uses a whole A100/H100; one whole GPU per replica strands most of "
                  "each device. Time-slicing (or MPS/MIG) lets several replicas share a device.",
        remediation="Enable GPU Operator time-slicing for these nodes (the ConfigMap below), label the nodes with "
                    "`nvidia.com/device-plugin.config=<key>`, and keep `nvidia.com/gpu: 1` in the pods.",
        params={"min_pods": 2, "replicas": 4, "max_cpu": "8", "max_memory": "32Gi"}),
    CheckInfo(
        id="KG-103", pitfall=1, severity="warn",
        title="Multi-pod GPU training without a gang scheduler",
        rationale="kube-scheduler places pods one by one: half of a job can bind, hold its GPUs and wait forever "
                  "for the rest, deadlocking against other half-placed jobs.",
        remediation="Run multi-pod training through a gang scheduler (Volcano, Kueue with WaitForPodsReady, "
                    "scheduler-plugins coscheduling, or KAI) and give each job a PodGroup with minMember.",
        params={}),
    CheckInfo(
        id="KG-104", pitfall=1, severity="warn",
        title="Stranded GPUs and no defragmentation or consolidation in the cluster",
        rationale="Fragmentation only grows as pods come and go; without a compaction mechanism nothing ever "
                  "moves small pods together again.",
        remediation="Run `kubegpu defrag` (plan, then --apply), or deploy the descheduler with "
                    "HighNodeUtilization, or a scheduler with consolidation (KAI, Volcano shuffle).",
        params={}),
    CheckInfo(
        id="KG-105", pitfall=1, severity="warn",
        title="Gang (PodGroup) marker on pods that no running scheduler enforces",
        rationale="A pod-group label or annotation does nothing by itself: kube-scheduler's default profile "
                  "ignores it, and a gang scheduler only enforces it for pods whose schedulerName it serves. "
                  "Pods that name another scheduler are placed one by one, so half a job can hold GPUs while "
                  "the rest waits.",
        remediation="Run the gang scheduler (scheduler-plugins coscheduling, Volcano or KAI) and set the pods' "
                    "`schedulerName` to the name it serves, or enable the plugin in the profile they use.",
        params={}),
    # ------------------------------------------------------------------ 2 pending
    CheckInfo(
        id="KG-201", pitfall=2, severity="warn",
        title="Pending GPU pod",
        rationale="A Pending GPU pod is work that does not run; the scheduler's event names the filters, not "
                  "the fix.",
        remediation="Read the reason below (`kubegpu why POD` explains it node by node) and apply the smallest "
                    "fix: free or add GPUs of the right model, add the missing toleration, or relax the selector.",
        params={}),
    CheckInfo(
        id="KG-202", pitfall=2, severity="warn",
        title="GPU node taint that no workload tolerates",
        rationale="A NoSchedule/NoExecute taint on GPU nodes that no pod or pod template tolerates keeps every "
                  "workload off those GPUs: they sit idle while GPU pods stay Pending.",
        remediation="Add the toleration to the GPU workloads' pod templates, or remove the taint if it is stale.",
        params={}),
    # ------------------------------------------------------------------ 3 autoscaling
    CheckInfo(
        id="KG-301", pitfall=3, severity="warn",
        title="cluster-autoscaler scale-down-delay-after-add is short for GPU nodes",
        rationale="GPU nodes take minutes to boot, install drivers and pull multi-GB images; a short delay after "
                  "scale-up lets the autoscaler remove nodes before the pods that asked for them ever start.",
        remediation="Set `--scale-down-delay-after-add=30m` (or more) on cluster-autoscaler.",
        params={"min": "30m"}),
    CheckInfo(
        id="KG-302", pitfall=3, severity="warn",
        title="cluster-autoscaler scale-down-unneeded-time is short for GPU nodes",
        rationale="GPU nodes idle between two jobs are removed after this time and the next job pays a full "
                  "scale-up again (node boot + driver + image pull).",
        remediation="Set `--scale-down-unneeded-time=30m` (or more) on cluster-autoscaler.",
        params={"min": "30m"}),
    CheckInfo(
        id="KG-303", pitfall=3, severity="warn",
        title="cluster-autoscaler utilization threshold makes busy GPU nodes scale-down candidates",
        rationale="With a high threshold a GPU node running real work counts as underused and its pods are "
                  "evicted to pack them elsewhere; training loses progress since its last checkpoint.",
        remediation="Keep `--scale-down-utilization-threshold` and `--scale-down-gpu-utilization-threshold` at 0.5 "
                    "or below; annotate training pods `cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"`.",
        params={"max": 0.5}),
    CheckInfo(
        id="KG-304", pitfall=3, severity="warn",
        title="GPU and CPU nodes in one node group",
        rationale="An autoscaler scales a node group as one shape: CPU-only pods trigger GPU nodes, and GPU "
                  "nodes are scaled down by CPU utilisation rules.",
        remediation="Put GPU nodes in their own node group / NodePool, tainted `nvidia.com/gpu=present:NoSchedule`.",
        params={}),
    CheckInfo(
        id="KG-305", pitfall=3, severity="warn",
        title="Karpenter GPU NodePool consolidates too quickly",
        rationale="consolidateAfter defaults to 0s: a GPU node emptied between two jobs is deleted at once, and "
                  "consolidation of underused nodes evicts running GPU pods.",
        remediation="On GPU NodePools set `spec.disruption.consolidateAfter: 30m` (or more) and "
                    "`consolidationPolicy: WhenEmpty`; mark training pods `karpenter.sh/do-not-disrupt: \"true\"`.",
        params={"min": "30m"}),
    CheckInfo(
        id="KG-306", pitfall=3, severity="info",
        title="No baseline GPU capacity: every GPU pod waits for a new node",
        rationale="When GPU node groups scale from zero and nothing reserves headroom, each new GPU pod waits "
                  "for a node to boot, install drivers and pull its image.",
        remediation="Keep a minimum GPU node count, or run low-priority placeholder pods (negative-priority "
                    "PriorityClass) that reserve GPUs and are preempted by real work.",
        params={}),
    # ------------------------------------------------------------------ 4 preemption
    CheckInfo(
        id="KG-401", pitfall=4, severity="warn",
        title="Inference PriorityClass preempts training",
        rationale="Preemption is pod-by-pod and gang-blind: one inference pod can kill one worker of a training "
                  "job, and the whole job loses everything since its last checkpoint.",
        remediation="Set `preemptionPolicy: Never` on the inference PriorityClass (it still queues first), or "
                    "separate the pools; give training gangs a PDB and frequent checkpoints.",
        params={}),
    CheckInfo(
        id="KG-402", pitfall=4, severity="warn",
        title="Training workload without a PodDisruptionBudget",
        rationale="Without a PDB, drains, the descheduler and autoscaler scale-down evict training pods freely.",
        remediation="Add a PodDisruptionBudget with `minAvailable` equal to the job's pod count (or "
                    "`maxUnavailable: 0`).",
        params={}),
    CheckInfo(
        id="KG-403", pitfall=4, severity="warn",
        title="Training workload without checkpoint storage",
        rationale="A preempted or evicted training pod restarts from zero when it has no persistent place to "
                  "write checkpoints.",
        remediation="Mount a PersistentVolumeClaim (or point a CHECKPOINT_* env/flag at object storage) and "
                    "checkpoint regularly.",
        params={}),
    CheckInfo(
        id="KG-404", pitfall=4, severity="warn",
        title="Training shares GPU nodes with pods that can preempt it",
        rationale="Higher-priority pods with preemptionPolicy PreemptLowerPriority on the same nodes will take "
                  "training pods' GPUs whenever they scale up.",
        remediation="Give training its own node pool (taint + toleration), or set `preemptionPolicy: Never` on "
                    "the higher-priority class.",
        params={}),
    # ------------------------------------------------------------------ 5 NCCL
    CheckInfo(
        id="KG-501", pitfall=5, severity="info",
        title="Multi-node training without NCCL_DEBUG",
        rationale="Without NCCL_DEBUG=INFO the logs never say which transport NCCL chose, so a silent fallback "
                  "to TCP sockets goes unnoticed.",
        remediation="Set `NCCL_DEBUG=INFO` and `NCCL_DEBUG_SUBSYS=INIT,NET`; then `kubegpu nccl` reads the logs.",
        params={}),
    CheckInfo(
        id="KG-502", pitfall=5, severity="warn",
        title="NCCL_SOCKET_IFNAME missing or ambiguous on multi-node training",
        rationale="NCCL picks the first interface that is not lo/docker; in pods with several interfaces (Multus, "
                  "veth, hostNetwork) it may bootstrap over the wrong one and hang or crawl.",
        remediation="Set `NCCL_SOCKET_IFNAME` to the exact interface (e.g. `=eth0`, or the RDMA/secondary "
                    "network's name).",
        params={"min_prefix": 3}),
    CheckInfo(
        id="KG-503", pitfall=5, severity="warn",
        title="Multi-node training with no RDMA device and no hostNetwork",
        rationale="Without an RDMA resource (rdma/*, SR-IOV) or the host's network, NCCL falls back to TCP "
                  "sockets over the CNI overlay: an order of magnitude slower all-reduce.",
        remediation="Request the RDMA device (e.g. `rdma/hca_shared_devices_a: 1`) with IPC_LOCK, or use "
                    "hostNetwork for the workers (a deliberate trade-off that security linters will flag).",
        params={}),
    CheckInfo(
        id="KG-504", pitfall=5, severity="warn",
        title="Debug setting NCCL_IB_DISABLE / NCCL_P2P_DISABLE left in a training spec",
        rationale="These switches are for debugging; left in production they force TCP instead of InfiniBand/"
                  "RoCE, or PCIe copies instead of NVLink.",
        remediation="Remove the variable from the pod template.",
        params={}),
    CheckInfo(
        id="KG-505", pitfall=5, severity="error",
        title="NetworkPolicy blocks the ephemeral ports NCCL uses",
        rationale="NCCL listens on ephemeral ports (Linux default 32768-60999); a policy that admits only listed "
                  "ports between workers lets the rendezvous succeed and then hangs the first collective.",
        remediation="Allow all TCP ports between the job's own pods (an ingress rule from the job's pods with no "
                    "`ports`), or pin `net.ipv4.ip_local_port_range` and open that range.",
        params={"min_range": 1000}),
    # ------------------------------------------------------------------ 6 services
    CheckInfo(
        id="KG-601", pitfall=6, severity="warn",
        title="Distributed GPU pods behind a load-balanced ClusterIP Service",
        rationale="A ClusterIP Service sends each connection to any ready pod: rank-to-rank traffic and the "
                  "rendezvous land on the wrong pod.",
        remediation="Use a headless Service (`clusterIP: None`) so each pod has its own DNS name "
                    "(`<pod>.<service>`).",
        params={}),
    CheckInfo(
        id="KG-602", pitfall=6, severity="warn",
        title="MASTER_ADDR points to a non-headless Service",
        rationale="Behind a load-balanced virtual IP the rendezvous can reach a worker instead of rank 0.",
        remediation="Point MASTER_ADDR at rank 0's stable name through a headless Service "
                    "(`<job>-0.<headless-service>`).",
        params={}),
    CheckInfo(
        id="KG-603", pitfall=6, severity="warn",
        title="GPU StatefulSet without its headless Service",
        rationale="A StatefulSet's pods get stable DNS names only through the headless Service named in "
                  "serviceName.",
        remediation="Create the headless Service named in `spec.serviceName` (clusterIP: None, same selector).",
        params={}),
    # ------------------------------------------------------------------ 7 DNS
    CheckInfo(
        id="KG-701", pitfall=7, severity="warn",
        title="CoreDNS has fewer replicas than the cluster size calls for",
        rationale="Each replica serves a bounded query rate; the cluster-proportional-autoscaler formula "
                  "(max(cores/256, nodes/16), at least 2) is the common baseline.",
        remediation="Scale CoreDNS to the expected count and let an autoscaler keep it there.",
        params={"cores_per_replica": 256, "nodes_per_replica": 16, "min": 2}),
    CheckInfo(
        id="KG-702", pitfall=7, severity="warn",
        title="CoreDNS has no autoscaler",
        rationale="A fixed replica count does not follow the cluster as it grows or as inference traffic fans out.",
        remediation="Deploy cluster-proportional-autoscaler (`dns-autoscaler`) for the CoreDNS Deployment, or an "
                    "HPA.",
        params={}),
    CheckInfo(
        id="KG-703", pitfall=7, severity="warn",
        title="All CoreDNS replicas run on one node",
        rationale="One node's failure or saturation takes all cluster DNS with it.",
        remediation="Spread CoreDNS with a topologySpreadConstraint or required pod anti-affinity on "
                    "kubernetes.io/hostname.",
        params={}),
    CheckInfo(
        id="KG-704", pitfall=7, severity="info",
        title="No NodeLocal DNSCache",
        rationale="Without a node-local cache every lookup crosses the network to CoreDNS through conntrack, "
                  "which drops UDP under load (5 s timeouts).",
        remediation="Deploy NodeLocal DNSCache (DaemonSet node-local-dns, 169.254.20.10).",
        params={}),
    CheckInfo(
        id="KG-705", pitfall=7, severity="info",
        title="High fan-out pods with the default ndots:5",
        rationale="With ndots:5 every external name is tried against each search domain first: 5-10 queries per "
                  "lookup from every replica.",
        remediation="Add `dnsConfig: {options: [{name: ndots, value: \"2\"}]}` to the pod template, or use "
                    "fully qualified names with a trailing dot.",
        params={"min_replicas": 8}),
    # ------------------------------------------------------------------ 8 shared storage
    CheckInfo(
        id="KG-801", pitfall=8, severity="warn",
        title="Many pods mount one shared network-filesystem model volume",
        rationale="Every replica reads the same weights through one NFS/CephFS server at start-up; the server's "
                  "bandwidth divided by the replicas sets the load time, and mounts time out.",
        remediation="Cache the model on node-local NVMe (see pitfall 9), or stagger roll-outs; at least mount "
                    "with `nconnect=8` and `hard`.",
        params={"min_pods": 4}),
    CheckInfo(
        id="KG-802", pitfall=8, severity="error",
        title="Pods failed to mount volumes in time (FailedMount timeout)",
        rationale="kubelet gives up after 2m03s and retries; the pod holds its GPUs while it waits.",
        remediation="Look at the sibling MountVolume.SetUp/MountDevice event for the cause; reduce the load on "
                    "the file server (local cache), and check the NFS server and CSI node plugin.",
        params={}),
    CheckInfo(
        id="KG-803", pitfall=8, severity="warn",
        title="NFS volume mounted with `soft`",
        rationale="A soft mount returns EIO after its retries: a model load under load reads a truncated file "
                  "and crashes or serves garbage.",
        remediation="Mount with `hard` (the default) in the StorageClass or PV mountOptions.",
        params={}),
    CheckInfo(
        id="KG-804", pitfall=8, severity="info",
        title="NFS volume without nconnect",
        rationale="One TCP connection per server caps throughput well below the NIC; `nconnect` (Linux 5.3+) "
                  "opens up to 16.",
        remediation="Add `nconnect=8` to the StorageClass or PV mountOptions.",
        params={}),
    CheckInfo(
        id="KG-805", pitfall=8, severity="info",
        title="GPU pods mount a shared model volume with no start-up gating",
        rationale="Without a startupProbe (or an init container that checks the model files) a slow mount or "
                  "load gets the container killed by its liveness probe, or traffic before the model is ready.",
        remediation="Add a startupProbe sized for the model load time (`kubegpu storage estimate`), or an init "
                    "container that waits for the weights.",
        params={}),
    # ------------------------------------------------------------------ 9 model cache
    CheckInfo(
        id="KG-901", pitfall=9, severity="warn",
        title="Many replicas load the same weights and no local model cache exists",
        rationale="Every replica start pulls the full model over the network; a node-local cache turns "
                  "minutes into seconds and removes the shared-server bottleneck.",
        remediation="Pre-distribute the model to node-local disks: KServe LocalModelCache, Fluid Dataset + "
                    "DataLoad, Dragonfly P2P, or a local PV per node.",
        params={"min_replicas": 4}),
    CheckInfo(
        id="KG-902", pitfall=9, severity="warn",
        title="Replicas of one model run different versions",
        rationale="A stuck roll-out or hand-edited pods serve two model versions behind one Service: answers "
                  "differ by replica.",
        remediation="Finish or roll back the roll-out so every replica runs one image and one model revision.",
        params={}),
    # ------------------------------------------------------------------ 10 local storage
    CheckInfo(
        id="KG-1001", pitfall=10, severity="warn",
        title="Local-disk StorageClass with Immediate binding",
        rationale="With Immediate binding a node-local volume is placed before the scheduler picks a node; the "
                  "pod is then pinned to a node that may have no free GPU, and stays Pending.",
        remediation="Set `volumeBindingMode: WaitForFirstConsumer` (recreate the StorageClass; the field is "
                    "immutable).",
        params={}),
    CheckInfo(
        id="KG-1002", pitfall=10, severity="warn",
        title="No alert on node IO wait",
        rationale="GPUs waiting for data show up as low utilisation, not as errors; only node iowait reveals "
                  "the storage bottleneck.",
        remediation="Apply the PrometheusRule from `kubegpu rules` (iowait > 10% for 10m, GPUs idle while "
                    "allocated, GPU idle while iowait is high).",
        params={}),
    CheckInfo(
        id="KG-1003", pitfall=10, severity="warn",
        title="GPU node without local NVMe storage for model weights",
        rationale="Loading weights from network storage is ~15x slower than from local NVMe (200 MB/s vs "
                  "3 GB/s: 70 s vs 5 s for a 14 GB model).",
        remediation="Provision local NVMe on GPU nodes and expose it through a local-volume provisioner "
                    "(local-static-provisioner, TopoLVM, OpenEBS LocalPV) with WaitForFirstConsumer.",
        params={"min_ephemeral": "1Ti"}),
)

CATALOG_BY_ID: dict[str, CheckInfo] = {c.id: c for c in CATALOG}
