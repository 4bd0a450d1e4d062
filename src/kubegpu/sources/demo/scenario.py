"""The GPU layout: which pod holds which GPUs on which node, per variant, and the five pending pods.

Pitfalls: 70 of 80 GPUs allocated, exactly one free GPU on every GPU node, low-priority
training spilled into the inference pool. Clean: the same 70 GPUs packed by pool
(8 nodes full, gpu-inf-03 with 6, gpu-inf-04 empty) and nothing pending.

Each workload maps to the nodes of its pods, in pod order (index 0 first).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.sources.demo.pods import PodState

I1, I2, I3, I4 = "gpu-inf-01", "gpu-inf-02", "gpu-inf-03", "gpu-inf-04"
T1, T2, T3, T4, T5, T6 = (f"gpu-train-{i:02d}" for i in range(1, 7))

# GPUs per pod of each running GPU workload (same in both variants)
GPUS_PER_POD = {
    "llm-pretrain": 4, "vision-finetune": 2, "code-sft": 4, "asr-finetune": 2,
    "hparam-sweep": 1, "data-dedup": 1, "gpu-debug-shell": 1,
    "chat-llama": 1, "embedding-server": 1,
}

PLACEMENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "pitfalls": {
        "llm-pretrain": (T1, T2, T3, T4),
        # two of the four DDP workers spilled into the inference pool
        "vision-finetune": (T2, T3, I3, I4),
        "code-sft": (T5,),
        "asr-finetune": (T5, T6, T6),
        "hparam-sweep": (T1, T1, T1, T2, T4, T4, T5, T6, T6, T6, I2, I4),
        "data-dedup": (T4,),
        "gpu-debug-shell": (T3,),
        "embedding-server": (I1, I2),
    },
    "clean": {
        "llm-pretrain": (T1, T1, T2, T2),
        "vision-finetune": (T3, T3, T4, T4),
        "code-sft": (T3,),
        "asr-finetune": (T4, T4, T5),
        "hparam-sweep": (T5,) * 6 + (T6,) * 6,
        "data-dedup": (T6,),
        "gpu-debug-shell": (T6,),
        "embedding-server": (I1, I2),
    },
}


@dataclass(frozen=True)
class ChatReplica:
    """One chat-llama replica: node, Deployment revision, and whether its NFS mount hangs."""

    node: str
    revision: int
    stuck: bool = False


CHAT_REPLICAS: dict[str, tuple[ChatReplica, ...]] = {
    # mid-rollout: 12 replicas on revision 1, 8 on revision 2; 4 new ones hang on the NFS mount
    "pitfalls": (
        *(ChatReplica(I1, 1) for _ in range(6)),
        *(ChatReplica(I2, 1) for _ in range(4)), ChatReplica(I2, 2),
        ChatReplica(I3, 1), ChatReplica(I3, 1), ChatReplica(I3, 2),
        ChatReplica(I3, 2, stuck=True), ChatReplica(I3, 2, stuck=True),
        ChatReplica(I4, 2), ChatReplica(I4, 2), ChatReplica(I4, 2, stuck=True), ChatReplica(I4, 2, stuck=True),
    ),
    "clean": (*(ChatReplica(I1, 1) for _ in range(7)), *(ChatReplica(I2, 1) for _ in range(7)),
              *(ChatReplica(I3, 1) for _ in range(6))),
}

# Finished sweep trials still listed on their nodes: they hold no GPU.
FINISHED_SWEEP_PODS: dict[str, tuple[tuple[str, PodState], ...]] = {
    "pitfalls": ((T1, PodState.SUCCEEDED), (T6, PodState.SUCCEEDED), (I2, PodState.FAILED)),
    "clean": ((T5, PodState.SUCCEEDED), (T6, PodState.SUCCEEDED), (T6, PodState.FAILED)),
}

# kube-scheduler v1.35 FailedScheduling messages for the pending pods on the pitfalls cluster
# (scheduler-facts 1.3): filters in upstream order, NodeResourcesFit listing every short resource,
# histogram entries sorted as strings; then the PostFilter plugins' messages: DynamicResources
# ("no new claims to deallocate", on by default since 1.34) and DefaultPreemption.
_POST_NO_VICTIMS = ("no new claims to deallocate, preemption: 0/40 nodes are available: 10 No preemption "
                    "victims found for incoming pod, 30 Preemption is not helpful for scheduling.")
_POST_NOT_HELPFUL = ("no new claims to deallocate, preemption: 0/40 nodes are available: 40 Preemption is "
                     "not helpful for scheduling.")
# large training pods: GPU nodes lack GPUs only; the m6i CPU nodes lack cpu, memory and GPUs
MSG_NO_VICTIMS = ("0/40 nodes are available: 30 Insufficient cpu, 30 Insufficient memory, 40 Insufficient "
                  "nvidia.com/gpu. " + _POST_NO_VICTIMS)
MSG_UNTOLERATED = ("0/40 nodes are available: 10 node(s) had untolerated taint(s), 30 Insufficient "
                   "nvidia.com/gpu. " + _POST_NOT_HELPFUL)
MSG_NO_H100 = "0/40 nodes are available: 40 node(s) didn't match Pod's node affinity/selector. " + _POST_NOT_HELPFUL
# Preemption succeeds for this one: PostFilter returns Success, so the event carries no suffix.
MSG_INFERENCE = ("0/40 nodes are available: 36 node(s) didn't match Pod's node affinity/selector, "
                 "4 Insufficient nvidia.com/gpu.")


@dataclass(frozen=True)
class PendingPod:
    """One unscheduled GPU pod of the pitfalls cluster and what should happen to it."""

    key: str
    gpus: int
    message: str
    outcome: str


PENDING_PODS = (
    PendingPod("ppo-actor", 2, MSG_NO_VICTIMS,
               "2-pod gang (coscheduling PodGroup minMember 2), 2 GPUs each: fits after two 1-GPU moves "
               "leave two nodes with 2 free GPUs (or three moves leave one node with 4)"),
    PendingPod("sft-mixtral", 4, MSG_NO_VICTIMS,
               "fits after moving the three hparam-sweep pods off gpu-train-01 onto three other free GPUs"),
    PendingPod("alice-notebook", 1, MSG_UNTOLERATED,
               "no toleration for nvidia.com/gpu=present:NoSchedule: fits at once when the toleration is added"),
    PendingPod("eval-h100-bench", 1, MSG_NO_H100,
               "pinned to nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3: no such node, never fits here"),
    PendingPod("summarizer-70b", 2, MSG_INFERENCE,
               "inference-high (1000000, PreemptLowerPriority), pool=inference: fits only by preempting "
               "low-priority training pods in the inference pool (e.g. vision-finetune's worker on gpu-inf-03)"),
)


def gpu_pods_per_node(variant: str) -> dict[str, int]:
    """Allocated GPUs per node implied by the layout (a cross-check for tests and docs)."""
    used: dict[str, int] = {}
    for workload, nodes in PLACEMENTS[variant].items():
        for node in nodes:
            used[node] = used.get(node, 0) + GPUS_PER_POD[workload]
    for replica in CHAT_REPLICAS[variant]:
        used[replica.node] = used.get(replica.node, 0) + 1
    return used
