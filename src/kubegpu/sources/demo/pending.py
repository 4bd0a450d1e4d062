"""The five unscheduled GPU pods of the pitfalls cluster (pitfalls 1 and 2), their controllers,
the coscheduling PodGroup of the gang, and the scheduler and autoscaler events about them."""

from __future__ import annotations

from datetime import datetime, timedelta

from kubegpu.sources.demo.builders import (
    GPU_TOLERATION,
    ago,
    container,
    obj,
    pod_template,
    resources,
)
from kubegpu.sources.demo.controllers import (
    Revision,
    deployment,
    job,
    service,
    statefulset,
)
from kubegpu.sources.demo.events import failed_scheduling, not_triggered_scale_up
from kubegpu.sources.demo.pods import PodPlacement, PodState
from kubegpu.sources.demo.scenario import (
    MSG_INFERENCE,
    MSG_NO_H100,
    MSG_NO_VICTIMS,
    MSG_UNTOLERATED,
)

PYTORCH = "nvcr.io/nvidia/pytorch:25.10-py3"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
CA_NO_GPU = "pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu, 2 max node group size reached"
CA_NO_MATCH = ("pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector, "
               "2 max node group size reached")


def _unscheduled(message: str) -> PodPlacement:
    return PodPlacement(None, state=PodState.UNSCHEDULABLE, unschedulable_message=message)


def _trainer(gpus: int, cpu: str, memory: str, command: list[str], env: dict | None = None) -> dict:
    return container("trainer", PYTORCH, command=command, env=env,
                     res=resources(cpu=cpu, memory=memory, memory_limit=memory, gpu=gpus))


def _gang(created: datetime) -> list[dict]:
    group = obj("scheduling.x-k8s.io/v1alpha1", "PodGroup", "ppo-actor", "ml-training", created=created,
                generation=1)
    group["spec"] = {"minMember": 2, "scheduleTimeoutSeconds": 600}
    group["status"] = {"phase": "Pending", "scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}
    env = {"MASTER_ADDR": "ppo-actor-0.ppo-actor.ml-training.svc.cluster.local", "MASTER_PORT": "29500",
           "WORLD_SIZE": "4", "NNODES": "2", "NPROC_PER_NODE": "2"}
    template = pod_template({"app.kubernetes.io/name": "ppo-actor", "workload-type": "training", GANG_LABEL: "ppo-actor"},
                            [_trainer(2, "16", "160Gi", ["torchrun", "--nnodes", "2", "--nproc-per-node", "2",
                                                         "ppo_train.py"], env)],
                            priorityClassName="training-low", tolerations=[dict(GPU_TOLERATION)],
                            restartPolicy="Never")
    return [group, *job("ppo-actor", "ml-training", template, placements=[_unscheduled(MSG_NO_VICTIMS)] * 2,
                        created=created, parallelism=2, completions=2, indexed=True, subdomain="ppo-actor",
                        labels={"app.kubernetes.io/name": "ppo-actor"}, backoff_limit=0),
            service("ppo-actor", "ml-training", selector={"job-name": "ppo-actor"}, headless=True,
                    publish_not_ready=True, created=created, ports=[{"name": "c10d", "port": 29500}])]


def _sft(created: datetime) -> list[dict]:
    template = pod_template({"app.kubernetes.io/name": "sft-mixtral", "workload-type": "training"},
                            [_trainer(4, "20", "320Gi", ["torchrun", "--nproc-per-node", "4", "sft.py",
                                                         "--model", "mixtral-8x7b"])],
                            priorityClassName="training-low", tolerations=[dict(GPU_TOLERATION)],
                            restartPolicy="Never")
    return job("sft-mixtral", "ml-training", template, placements=[_unscheduled(MSG_NO_VICTIMS)],
               created=created, parallelism=1, completions=1, labels={"app.kubernetes.io/name": "sft-mixtral"})


def _notebook(created: datetime) -> list[dict]:
    """A Kubeflow-style notebook that asks for a GPU but forgot the GPU taint's toleration."""
    ctr = container("alice-notebook", "kubeflownotebookswg/jupyter-pytorch-cuda-full:v1.10.0",
                    ports=[{"containerPort": 8888, "name": "notebook-port"}],
                    res=resources(cpu="4", memory="32Gi", memory_limit="32Gi", gpu=1))
    labels = {"app": "alice-notebook", "notebook-name": "alice-notebook", "statefulset": "alice-notebook"}
    template = pod_template(labels, [ctr], priorityClassName="research-interactive",
                            serviceAccountName="default-editor")
    return statefulset("alice-notebook", "ml-research", template, service_name="alice-notebook",
                       placements=[_unscheduled(MSG_UNTOLERATED)], created=created)


def _h100(created: datetime) -> list[dict]:
    template = pod_template({"app.kubernetes.io/name": "eval-h100-bench"},
                            [_trainer(1, "8", "64Gi", ["python", "bench.py", "--fp8"])],
                            priorityClassName="training-low", tolerations=[dict(GPU_TOLERATION)],
                            nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, restartPolicy="Never")
    return job("eval-h100-bench", "ml-research", template, placements=[_unscheduled(MSG_NO_H100)],
               created=created, parallelism=1, completions=1, labels={"app.kubernetes.io/name": "eval-h100-bench"})


def _summarizer(created: datetime) -> list[dict]:
    ctr = container("vllm", "vllm/vllm-openai:v0.11.2",
                    command=["vllm", "serve", "s3://acme-models/llama-3.3-70b-instruct-fp8/2026-11-20"],
                    args=["--tensor-parallel-size", "2", "--port", "8000"],
                    ports=[{"containerPort": 8000, "name": "http"}], probe_port=8000,
                    res=resources(cpu="16", memory="192Gi", memory_limit="192Gi", gpu=2))
    labels = {"app": "summarizer-70b", "workload-type": "inference"}
    template = pod_template(labels, [ctr], priorityClassName="inference-high", nodeSelector={"pool": "inference"},
                            tolerations=[dict(GPU_TOLERATION)])
    return deployment("summarizer-70b", "inference", replicas=1, created=created,
                      revisions=[Revision(1, template, (_unscheduled(MSG_INFERENCE),), created)])


def pending_objects() -> list[dict]:
    """The pending workloads plus a FailedScheduling (and NotTriggerScaleUp) event per pod."""
    objs = (_gang(ago(minutes=42)) + _sft(ago(hours=1, minutes=15)) + _notebook(ago(hours=2, minutes=5))
            + _h100(ago(hours=6)) + _summarizer(ago(minutes=3)))
    events = []
    for pod in (o for o in objs if o["kind"] == "Pod"):
        message = pod["status"]["conditions"][0]["message"]
        created = datetime.fromisoformat(pod["metadata"]["creationTimestamp"])
        events.append(failed_scheduling(pod, message, first=created + timedelta(seconds=1)))
        selector = pod["spec"].get("nodeSelector")
        events.append(not_triggered_scale_up(pod, CA_NO_MATCH if selector else CA_NO_GPU,
                                             first=created + timedelta(seconds=12)))
    return objs + events
