"""Training workloads (namespace ml-training) and the research pods that share the GPU nodes.

Pitfalls (4, 5, 6): indexed Jobs with no pool selector, no PDB, checkpoints on emptyDir or
none, multi-GPU pods with no NCCL_* env, no EFA/RDMA and no hostNetwork, rendezvous through
a load-balanced ClusterIP Service, and a NetworkPolicy that only admits port 29500.
Clean: StatefulSets + headless Services, pool=training selector, PDBs, a shared checkpoint
PVC with recent checkpoints, NCCL env, EFA + IPC_LOCK, an ephemeral port range that the
NetworkPolicy admits.
"""

from __future__ import annotations

from datetime import datetime

from kubegpu.sources.demo.builders import (
    GPU_TOLERATION,
    ago,
    container,
    obj,
    pod_template,
    resources,
    rfc3339,
)
from kubegpu.sources.demo.controllers import job, pdb, service, statefulset
from kubegpu.sources.demo.pods import PodPlacement, build_pod
from kubegpu.sources.demo.scenario import FINISHED_SWEEP_PODS, PLACEMENTS
from kubegpu.sources.demo.storage import bound_claim

NS = "ml-training"
RESEARCH_NS = "ml-research"
PYTORCH = "nvcr.io/nvidia/pytorch:25.10-py3"
CKPT_ANNOTATION = "kubegpu.io/last-checkpoint"
CKPT_INTERVAL = "kubegpu.io/checkpoint-interval"
NCCL_PORTS = (50000, 51000)
CHECKPOINT_PVC = "training-checkpoints"
EFA = "vpc.amazonaws.com/efa"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
GANG_SCHEDULER_NAME = "scheduler-plugins-scheduler"


def _train_container(variant: str, name: str, image: str, *, gpus: int, cpu: str, memory: str,
                     env: dict, multi_node: bool, command: list[str], mounts: list[dict]) -> dict:
    extra = {}
    security = None
    env = dict(env)
    if variant == "clean" and gpus > 1:
        env.update(NCCL_DEBUG="WARN", NCCL_SOCKET_IFNAME="eth0")
        if multi_node:
            env.update(FI_PROVIDER="efa", FI_EFA_USE_DEVICE_RDMA="1")
            extra = {EFA: str(gpus // 2)}
            security = {"capabilities": {"add": ["IPC_LOCK"]}}
    return container(name, image, command=command, env=env, mounts=mounts, security=security,
                     res=resources(cpu=cpu, memory=memory, memory_limit=memory, gpu=gpus, extra=extra))


def _volumes(variant: str, *, local_checkpoints: bool) -> tuple[list[dict], list[dict]]:
    """Shared memory plus the checkpoint directory: the shared PVC (clean), a node-local emptyDir
    that dies with the pod (pitfalls, jobs that checkpoint at all) or nothing."""
    shm = ({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
           {"name": "dshm", "mountPath": "/dev/shm"})
    if variant == "clean":
        ckpt = {"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINT_PVC}}
    elif local_checkpoints:
        ckpt = {"name": "checkpoints", "emptyDir": {}}
    else:
        return [shm[0]], [shm[1]]
    return [shm[0], ckpt], [shm[1], {"name": "checkpoints", "mountPath": "/checkpoints"}]


def _template(variant: str, app: str, ctr: dict, volumes: list[dict], *, annotations: dict | None = None,
              restart: str = "Never", extra_labels: dict | None = None) -> dict:
    spec: dict = {"priorityClassName": "training-low", "tolerations": [dict(GPU_TOLERATION)],
                  "volumes": volumes, "restartPolicy": restart, "terminationGracePeriodSeconds": 120}
    if variant == "clean" and GANG_LABEL in (extra_labels or {}):
        spec["schedulerName"] = GANG_SCHEDULER_NAME  # the coscheduling scheduler enforces the gang
    if variant == "clean":
        spec["nodeSelector"] = {"pool": "training"}
        spec["securityContext"] = {"sysctls": [{"name": "net.ipv4.ip_local_port_range",
                                                "value": f"{NCCL_PORTS[0]} {NCCL_PORTS[1]}"}]}
    labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "training",
              "workload-type": "training", **(extra_labels or {})}
    return pod_template(labels, [ctr], annotations=annotations, **spec)


def _ckpt(variant: str, last: datetime | None, interval: str) -> dict:
    if variant == "clean":
        return {CKPT_ANNOTATION: rfc3339(last or ago(minutes=12)), CKPT_INTERVAL: "30m"}
    return {CKPT_ANNOTATION: rfc3339(last), CKPT_INTERVAL: interval} if last else {}


def _distributed(variant: str, app: str, *, gpus: int, cpu: str, memory: str, started: datetime,
                 last_ckpt: datetime | None, interval: str, script: list[str],
                 debug_env: dict | None = None) -> list[dict]:
    """A multi-node DDP job: indexed Job + ClusterIP Service (pitfalls) or StatefulSet + headless."""
    nodes = PLACEMENTS[variant][app]
    world = len(nodes)
    vols, mounts = _volumes(variant, local_checkpoints=last_ckpt is not None)
    if variant == "clean":
        svc_name = f"{app}-headless"
        master = f"{app}-0.{svc_name}.{NS}.svc.cluster.local"
    else:
        svc_name = app
        master = f"{app}.{NS}.svc.cluster.local"
    env = {"MASTER_ADDR": master, "MASTER_PORT": "29500", "WORLD_SIZE": str(world * gpus),
           "NNODES": str(world), "NPROC_PER_NODE": str(gpus), **((debug_env or {}) if variant == "pitfalls" else {})}
    cmd = ["torchrun", "--nnodes", str(world), "--nproc-per-node", str(gpus),
           "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{master}:29500", *script]
    ctr = _train_container(variant, "trainer", PYTORCH, gpus=gpus, cpu=cpu, memory=memory, env=env,
                           multi_node=True, command=cmd, mounts=mounts)
    ckpt = _ckpt(variant, last_ckpt, interval)
    placements = [PodPlacement(n, started=started) for n in nodes]
    created = started
    if variant == "clean":
        template = _template(variant, app, ctr, vols, annotations=ckpt, restart="Always",
                             extra_labels={GANG_LABEL: app})
        objs = statefulset(app, NS, template, service_name=svc_name, placements=placements,
                           created=created, parallel=True, labels={"app.kubernetes.io/name": app})
        objs.append(service(svc_name, NS, selector={"app.kubernetes.io/name": app}, headless=True,
                            publish_not_ready=True, created=created,
                            ports=[{"name": "c10d", "port": 29500}]))
        objs.append(pdb(app, NS, selector={"app.kubernetes.io/name": app}, min_available=world,
                        created=created))
        objs.append(_pod_group(app, world, created))
        return objs
    template = _template(variant, app, ctr, vols, annotations=ckpt)
    objs = job(app, NS, template, placements=placements, created=created, parallelism=world,
               completions=world, indexed=True, labels={"app.kubernetes.io/name": app}, backoff_limit=0)
    objs.append(service(svc_name, NS, selector={"job-name": app}, created=created,
                        ports=[{"name": "c10d", "port": 29500}]))
    return objs


def _pod_group(name: str, members: int, created: datetime) -> dict:
    """A coscheduling PodGroup: the scheduler admits all `members` pods or none."""
    group = obj("scheduling.x-k8s.io/v1alpha1", "PodGroup", name, NS, created=created, generation=1)
    group["spec"] = {"minMember": members, "scheduleTimeoutSeconds": 600}
    group["status"] = {"phase": "Running", "scheduled": members, "running": members, "succeeded": 0,
                       "failed": 0, "scheduleStartTime": rfc3339(created)}
    return group


def _single(variant: str, app: str, *, image: str, gpus: int, cpu: str, memory: str, started: list[datetime],
            ckpt: dict, command: list[str], annotations: dict | None = None, parallelism: int | None = None,
            completions: int | None = None, finished: tuple = (), min_available: int | None = None,
            namespace: str = NS) -> list[dict]:
    """A non-indexed Job of independent GPU pods (each pod a whole experiment)."""
    vols, mounts = _volumes(variant, local_checkpoints=CKPT_ANNOTATION in ckpt)
    env = {"NPROC_PER_NODE": str(gpus)} if gpus > 1 else {}
    ctr = _train_container(variant, "trainer", image, gpus=gpus, cpu=cpu, memory=memory, env=env,
                           multi_node=False, command=command, mounts=mounts)
    template = _template(variant, app, ctr, vols, annotations={**ckpt, **(annotations or {})})
    placements = [PodPlacement(n, started=s) for n, s in zip(PLACEMENTS[variant][app], started, strict=True)]
    placements += [PodPlacement(n, state=st, started=ago(hours=3, minutes=7 * i)) for i, (n, st) in enumerate(finished)]
    first = min(p.started for p in placements)
    n = parallelism or len(started)
    objs = job(app, namespace, template, placements=placements, created=first, parallelism=n,
               completions=completions or n, labels={"app.kubernetes.io/name": app})
    if variant == "clean" and min_available is not None:
        objs.append(pdb(app, namespace, selector={"app.kubernetes.io/name": app},
                        min_available=min_available, created=first))
    return objs


def _debug_shell(variant: str) -> list[dict]:
    """A bare pod (no controller) someone left running with a GPU: nothing recreates it."""
    ctr = container("shell", "nvcr.io/nvidia/cuda:12.8.1-devel-ubuntu24.04", command=["sleep", "infinity"],
                    res=resources(cpu="4", memory="32Gi", memory_limit="32Gi", gpu=1))
    spec: dict = {"priorityClassName": "research-interactive",
                  "tolerations": [dict(GPU_TOLERATION)], "restartPolicy": "Always"}
    if variant == "clean":
        spec["nodeSelector"] = {"pool": "training"}
    template = pod_template({"app.kubernetes.io/name": "gpu-debug-shell", "owner": "bob"}, [ctr], **spec)
    node = PLACEMENTS[variant]["gpu-debug-shell"][0]
    started = ago(days=3, hours=2)
    return [build_pod(template, name="gpu-debug-shell", namespace=RESEARCH_NS, owner=None,
                      placement=PodPlacement(node, started=started), created=started)]


def _network_policy(variant: str) -> dict:
    np = obj("networking.k8s.io/v1", "NetworkPolicy", "training-ingress", NS, created=ago(days=30),
             generation=1)
    ports = [{"protocol": "TCP", "port": 29500}]
    if variant == "clean":
        ports.append({"protocol": "TCP", "port": NCCL_PORTS[0], "endPort": NCCL_PORTS[1]})
    np["spec"] = {"podSelector": {"matchLabels": {"workload-type": "training"}},
                  "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"workload-type": "training"}}}],
                               "ports": ports}]}
    return np


def training_objects(variant: str) -> list[dict]:
    """Every running training/research GPU workload of the variant, with its Services and PDBs."""
    objs: list[dict] = []
    objs += _distributed(variant, "llm-pretrain", gpus=4, cpu="44", memory="480Gi",
                         started=ago(days=2, hours=6), last_ckpt=ago(hours=3, minutes=48), interval="4h",
                         script=["train_llm.py", "--config", "configs/13b-pretrain.yaml"])
    objs += _distributed(variant, "vision-finetune", gpus=2, cpu="20", memory="200Gi",
                         started=ago(hours=9, minutes=20), last_ckpt=None, interval="",
                         script=["finetune_vit.py", "--epochs", "40"],
                         debug_env={"NCCL_IB_DISABLE": "1"})  # left over from a debugging session
    objs += _single(variant, "code-sft", image=PYTORCH, gpus=4, cpu="40", memory="400Gi",
                    started=[ago(hours=5, minutes=5)], command=["torchrun", "--nproc-per-node", "4", "sft.py"],
                    ckpt=_ckpt(variant, ago(hours=2, minutes=10), "2h"), min_available=1)
    objs += _single(variant, "asr-finetune", image="nvcr.io/nvidia/nemo:25.09", gpus=2, cpu="16",
                    memory="160Gi", started=[ago(hours=3, minutes=m) for m in (2, 14, 31)],
                    command=["python", "speech_to_text_finetune.py"],
                    ckpt=_ckpt(variant, ago(minutes=22), "30m"), min_available=2)
    sweep_starts = [ago(minutes=10 + 7 * i) for i in range(12)]
    objs += _single(variant, "hparam-sweep", image="ghcr.io/acme-ml/hparam-trial:2026.11.3", gpus=1, cpu="8",
                    memory="64Gi", started=sweep_starts, command=["python", "trial.py"],
                    ckpt={CKPT_INTERVAL: "30m"} if variant == "clean" else {},
                    parallelism=12, completions=40, finished=FINISHED_SWEEP_PODS[variant], min_available=10)
    objs += _single(variant, "data-dedup", image="ghcr.io/acme-ml/dedup-embed:1.4.0", gpus=1, cpu="10",
                    memory="96Gi", started=[ago(hours=7, minutes=40)], command=["python", "-m", "dedup.run"],
                    ckpt={}, annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
                    min_available=1)
    objs += _debug_shell(variant)
    objs.append(_network_policy(variant))
    if variant == "clean":
        objs += _checkpoint_storage()
    return objs


def _checkpoint_storage() -> list[dict]:
    """An FSx for Lustre RWX claim every training pod writes checkpoints to (clean only)."""
    return bound_claim(CHECKPOINT_PVC, NS, storage_class="fsx-lustre", size="12000Gi",
                       access="ReadWriteMany", created=ago(days=60),
                       source={"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0c5d8e2f41a7b3c96",
                                       "volumeAttributes": {"dnsname": "fs-0c5d8e2f41a7b3c96.fsx.us-east-1.amazonaws.com",
                                                            "mountname": "x7kq2bmv"}}})
