"""The one registry of audit checks: catalog ID -> function over an AuditContext.

Each family of pitfalls has its own module; this table is the only place a check is wired in.
Metadata (title, severity, remediation) lives in `kubegpu.audit.catalog`, keyed by the same IDs.
"""

from __future__ import annotations

from typing import Callable, Iterable

from kubegpu.audit.checks import (
    autoscaling,
    dns,
    fragmentation,
    gang_enforcement,
    local_storage,
    model_cache,
    nccl_env,
    pending,
    preemption,
    services,
    shared_storage,
)
from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit

CheckFn = Callable[[AuditContext], Iterable[Hit]]

REGISTRY: dict[str, CheckFn] = {
    "KG-101": fragmentation.stranded_gpus,
    "KG-102": fragmentation.whole_gpus_for_small_pods,
    "KG-103": fragmentation.no_gang_scheduler,
    "KG-104": fragmentation.no_compaction,
    "KG-105": gang_enforcement.unenforced_gangs,
    "KG-201": pending.pending_gpu_pods,
    "KG-202": pending.untolerated_gpu_taints,
    "KG-301": autoscaling.scale_down_delay_after_add,
    "KG-302": autoscaling.scale_down_unneeded_time,
    "KG-303": autoscaling.scale_down_utilization,
    "KG-304": autoscaling.mixed_node_groups,
    "KG-305": autoscaling.karpenter_consolidation,
    "KG-306": autoscaling.no_baseline_capacity,
    "KG-401": preemption.inference_preempts_training,
    "KG-402": preemption.training_without_pdb,
    "KG-403": preemption.training_without_checkpoints,
    "KG-404": preemption.training_shares_pool_with_preemptors,
    "KG-501": nccl_env.no_nccl_debug,
    "KG-502": nccl_env.ambiguous_socket_ifname,
    "KG-503": nccl_env.no_rdma_path,
    "KG-504": nccl_env.debug_switches_left,
    "KG-505": nccl_env.network_policy_blocks_nccl,
    "KG-601": services.load_balanced_service,
    "KG-602": services.master_addr_not_headless,
    "KG-603": services.statefulset_without_headless,
    "KG-701": dns.coredns_replicas,
    "KG-702": dns.coredns_without_autoscaler,
    "KG-703": dns.coredns_on_one_node,
    "KG-704": dns.no_nodelocal_dns,
    "KG-705": dns.default_ndots,
    "KG-801": shared_storage.shared_model_volume,
    "KG-802": shared_storage.failed_mount_timeouts,
    "KG-803": shared_storage.nfs_soft_mount,
    "KG-804": shared_storage.nfs_without_nconnect,
    "KG-805": shared_storage.no_startup_gating,
    "KG-901": model_cache.no_local_cache,
    "KG-902": model_cache.mixed_model_versions,
    "KG-1001": local_storage.immediate_local_binding,
    "KG-1002": local_storage.no_iowait_alert,
    "KG-1003": local_storage.gpu_nodes_without_local_nvme,
}
