"""Cluster add-ons and CPU workloads: namespaces, PriorityClasses (pitfall 4), monitoring and
its rules (pitfall 10), the GPU Operator's node agents, the coscheduling controller, KServe.

Pitfalls: inference-high (1000000) preempts training-low (1000); Prometheus has GPU rules
but no iowait alert. Clean: inference-high never preempts (the inference pool is reserved
by node selectors instead), and a PrometheusRule alerts on node iowait > 10%.
"""

from __future__ import annotations

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
    daemonset,
    deployment,
    service,
    statefulset,
)
from kubegpu.sources.demo.placement import CpuPlacer
from kubegpu.sources.demo.pods import PRIORITY_VALUES, PodPlacement

MONITORING = "monitoring"
GPU_OPERATOR = "gpu-operator"
RULE_LABELS = {"release": "kube-prometheus-stack", "app": "kube-prometheus-stack"}
NDOTS_2 = {"options": [{"name": "ndots", "value": "2"}]}
IOWAIT_EXPR = 'avg by (instance) (rate(node_cpu_seconds_total{mode="iowait"}[5m])) * 100 > 10'
NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "inference", "ml-training",
              "ml-research", "ml-platform", MONITORING, GPU_OPERATOR, "scheduler-plugins")


def namespaces(variant: str) -> list[dict]:
    """Namespace objects (Active), with the label the API server adds."""
    names = NAMESPACES + (("kserve", "kserve-localmodel-jobs") if variant == "clean" else ())
    out = []
    for name in names:
        ns = obj("v1", "Namespace", name, created=ago(days=200 if name.startswith("kube") else 120),
                 labels={"kubernetes.io/metadata.name": name})
        ns["spec"] = {"finalizers": ["kubernetes"]}
        ns["status"] = {"phase": "Active"}
        out.append(ns)
    return out


def priority_classes(variant: str) -> list[dict]:
    """The built-in system classes plus the cluster's three workload classes."""
    descriptions = {
        "system-node-critical": "Used for system critical pods that must not be moved from their current node.",
        "system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be "
                                   "moved to another node if necessary.",
        "inference-high": "Online inference: scheduled before everything else.",
        "research-interactive": "Notebooks and debug shells.",
        "training-low": "Batch training: runs on whatever GPUs are left.",
    }
    out = []
    for name, value in PRIORITY_VALUES.items():
        pc = obj("scheduling.k8s.io/v1", "PriorityClass", name, created=ago(days=200 if name.startswith("system") else 100))
        policy = "Never" if (variant == "clean" and name == "inference-high") else "PreemptLowerPriority"
        pc.update(value=value, globalDefault=False, description=descriptions[name], preemptionPolicy=policy)
        out.append(pc)
    return out


def _simple_deployment(name: str, namespace: str, image: str, *, replicas: int, cpu: str, memory: str,
                       placer: CpuPlacer, days: float, labels: dict | None = None, owner: dict | None = None,
                       args: list[str] | None = None, priority: str | None = None,
                       dns_config: dict | None = None) -> list[dict]:
    ctr = container(name, image, args=args, res=resources(cpu=cpu, memory=memory, memory_limit=memory))
    extra: dict = {"priorityClassName": priority} if priority else {}
    if dns_config:
        extra["dnsConfig"] = dns_config
    template = pod_template(labels or {"app.kubernetes.io/name": name}, [ctr], **extra)
    placements = tuple(PodPlacement(placer.place(cpu, memory), started=ago(days=days, hours=i % 7))
                       for i in range(replicas))
    return deployment(name, namespace, replicas=replicas, created=ago(days=days + 30), owner=owner,
                      revisions=[Revision(1, template, placements, ago(days=days))])


def _prometheus_rules(variant: str) -> list[dict]:
    gpu = obj("monitoring.coreos.com/v1", "PrometheusRule", "gpu-alerts", MONITORING, created=ago(days=90),
              labels=RULE_LABELS, generation=1)
    gpu["spec"] = {"groups": [{"name": "gpu.rules", "rules": [
        {"alert": "GPUXidError", "expr": "DCGM_FI_DEV_XID_ERRORS > 0", "for": "1m",
         "labels": {"severity": "critical"},
         "annotations": {"summary": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported Xid {{ $value }}"}},
        {"alert": "GPUHighTemperature", "expr": "DCGM_FI_DEV_GPU_TEMP > 85", "for": "10m",
         "labels": {"severity": "warning"}, "annotations": {"summary": "GPU running hot"}},
        {"alert": "GPUAllocatedButIdle",
         "expr": 'avg_over_time(DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}[30m]) < 5', "for": "30m",
         "labels": {"severity": "info"}, "annotations": {"summary": "GPU allocated to a pod but idle"}}]}]}
    out = [gpu]
    if variant == "clean":
        io = obj("monitoring.coreos.com/v1", "PrometheusRule", "node-io", MONITORING, created=ago(days=10),
                 labels=RULE_LABELS, generation=1)
        io["spec"] = {"groups": [{"name": "node-io.rules", "rules": [
            {"alert": "HostCpuHighIowait", "expr": IOWAIT_EXPR, "for": "10m", "labels": {"severity": "warning"},
             "annotations": {"summary": "Node {{ $labels.instance }} spends more than 10% of CPU time in iowait",
                             "description": "Training or serving on this node is likely IO-bound "
                                            "(model or dataset reads)."}}]}]}
        out.append(io)
    return out


def _monitoring(variant: str, placer: CpuPlacer) -> list[dict]:
    prom = obj("monitoring.coreos.com/v1", "Prometheus", "kube-prometheus-stack-prometheus", MONITORING,
               created=ago(days=120), labels=RULE_LABELS, generation=3)
    prom["spec"] = {"replicas": 2, "retention": "15d", "serviceAccountName": "kube-prometheus-stack-prometheus",
                    "ruleSelector": {"matchLabels": {"release": "kube-prometheus-stack"}},
                    "serviceMonitorSelector": {"matchLabels": {"release": "kube-prometheus-stack"}}}
    ctr = container("prometheus", "quay.io/prometheus/prometheus:v3.7.3", ports=[{"containerPort": 9090, "name": "web"}],
                    res=resources(cpu="2", memory="8Gi", memory_limit="12Gi"))
    labels = {"app.kubernetes.io/name": "prometheus", "prometheus": "kube-prometheus-stack-prometheus"}
    placements = [PodPlacement(placer.place("2", "8Gi"), started=ago(days=14)) for _ in range(2)]
    objs = [prom, *statefulset("prometheus-kube-prometheus-stack-prometheus", MONITORING,
                               pod_template(labels, [ctr]), service_name="prometheus-operated",
                               placements=placements, created=ago(days=120), owner=prom, labels=labels)]
    objs.append(service("prometheus-operated", MONITORING, selector={"app.kubernetes.io/name": "prometheus"},
                        headless=True, created=ago(days=120), ports=[{"name": "web", "port": 9090}]))
    objs += _simple_deployment("kube-prometheus-stack-operator", MONITORING, "quay.io/prometheus-operator/prometheus-operator:v0.86.2",
                               replicas=1, cpu="100m", memory="256Mi", placer=placer, days=14)
    objs += _simple_deployment("kube-state-metrics", MONITORING, "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.17.0",
                               replicas=1, cpu="100m", memory="256Mi", placer=placer, days=14)
    objs += _simple_deployment("grafana", MONITORING, "docker.io/grafana/grafana:12.2.1",
                               replicas=1, cpu="250m", memory="512Mi", placer=placer, days=14)
    exporter = container("node-exporter", "quay.io/prometheus/node-exporter:v1.10.2",
                         args=["--path.rootfs=/host/root", "--collector.mountstats"],
                         ports=[{"containerPort": 9100, "name": "http-metrics"}],
                         res=resources(cpu="100m", memory="64Mi", memory_limit="128Mi"))
    ne_labels = {"app.kubernetes.io/name": "prometheus-node-exporter"}
    objs.append(daemonset("prometheus-node-exporter", MONITORING,
                          pod_template(ne_labels, [exporter], hostNetwork=True, hostPID=True,
                                       tolerations=[{"operator": "Exists"}],
                                       priorityClassName="system-node-critical"),
                          created=ago(days=120), labels=ne_labels))
    return objs + _prometheus_rules(variant)


def _gpu_operator(placer: CpuPlacer) -> list[dict]:
    objs = _simple_deployment("gpu-operator", GPU_OPERATOR, "nvcr.io/nvidia/gpu-operator:v25.10.0",
                              replicas=1, cpu="200m", memory="256Mi", placer=placer, days=25,
                              priority="system-node-critical")
    for name, image, cpu, memory, selector in (
            ("nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "50m", "64Mi",
             "nvidia.com/gpu.deploy.device-plugin"),
            ("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "20m", "64Mi",
             "nvidia.com/gpu.deploy.gpu-feature-discovery"),
            ("nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04", "100m", "512Mi",
             "nvidia.com/gpu.deploy.dcgm-exporter")):
        ctr = container(name.removesuffix("-daemonset"), image, res=resources(cpu=cpu, memory=memory),
                        security={"privileged": True})
        template = pod_template({"app": name}, [ctr], nodeSelector={selector: "true"},
                                tolerations=[dict(GPU_TOLERATION)], priorityClassName="system-node-critical",
                                serviceAccountName=name)
        objs.append(daemonset(name, GPU_OPERATOR, template, created=ago(days=25), labels={"app": name}))
    objs.append(service("nvidia-dcgm-exporter", GPU_OPERATOR, selector={"app": "nvidia-dcgm-exporter"},
                        created=ago(days=25), ports=[{"name": "gpu-metrics", "port": 9400}]))
    return objs


def _kserve(placer: CpuPlacer) -> list[dict]:
    objs = _simple_deployment("kserve-controller-manager", "kserve", "kserve/kserve-controller:v0.16.0",
                              replicas=1, cpu="100m", memory="300Mi", placer=placer, days=7)
    objs += _simple_deployment("kserve-localmodel-controller-manager", "kserve", "kserve/kserve-localmodel-controller:v0.16.0",
                               replicas=1, cpu="100m", memory="300Mi", placer=placer, days=7)
    agent = container("manager", "kserve/kserve-localmodelnode-agent:v0.16.0",
                      mounts=[{"name": "models", "mountPath": "/mnt/models"}],
                      res=resources(cpu="100m", memory="200Mi", cpu_limit="100m", memory_limit="300Mi"))
    template = pod_template({"app": "gpu-inference-nvme-agent"}, [agent], nodeSelector={"pool": "inference"},
                            tolerations=[dict(GPU_TOLERATION)],
                            volumes=[{"name": "models", "hostPath": {"path": "/mnt/nvme/models", "type": ""}}])
    objs.append(daemonset("gpu-inference-nvme-agent", "kserve", template, created=ago(days=7)))
    cm = obj("v1", "ConfigMap", "inferenceservice-config", "kserve", created=ago(days=7))
    cm["data"] = {"localModel": '{"enabled": true, "jobNamespace": "kserve-localmodel-jobs", '
                                '"defaultJobImage": "kserve/storage-initializer:v0.16.0", "fsGroup": 1000}',
                  "deploy": '{"defaultDeploymentMode": "RawDeployment"}'}
    return objs + [cm]


def addon_objects(variant: str, placer: CpuPlacer) -> list[dict]:
    """Namespaces, PriorityClasses, monitoring, GPU Operator, coscheduling, KServe and CPU apps."""
    objs = namespaces(variant) + priority_classes(variant) + _monitoring(variant, placer) + _gpu_operator(placer)
    objs += _simple_deployment("scheduler-plugins-controller", "scheduler-plugins",
                               "registry.k8s.io/scheduler-plugins/controller:v0.33.5", replicas=1, cpu="50m",
                               memory="128Mi", placer=placer, days=60)
    if variant == "clean":
        objs += _kserve(placer)
    # CPU-side of the ML platform: shard readers feeding the trainers, feature store, tracking
    objs += _simple_deployment("data-loader", "ml-training", "ghcr.io/acme-ml/shard-loader:2.3.0", replicas=24,
                               cpu="4", memory="16Gi", placer=placer, days=2,
                               labels={"app.kubernetes.io/name": "data-loader", "workload-type": "data"},
                               dns_config=NDOTS_2 if variant == "clean" else None)
    objs += _simple_deployment("feature-store", "ml-platform", "docker.io/feastdev/feature-server:0.55.0",
                               replicas=4, cpu="2", memory="8Gi", placer=placer, days=20)
    objs += _simple_deployment("mlflow", "ml-platform", "ghcr.io/mlflow/mlflow:v3.6.0", replicas=2,
                               cpu="1", memory="4Gi", placer=placer, days=40)
    return objs


GANG_SCHEDULER_NAME = "scheduler-plugins-scheduler"
_SCHEDULER_CONFIG = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {GANG_SCHEDULER_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
"""


def gang_scheduler_objects(variant: str, placer: CpuPlacer) -> list[dict]:
    """Clean only: the scheduler-plugins second scheduler (Coscheduling) that the gang pods name.

    Placed last, so the CPU placement of every other demo pod stays as it was."""
    if variant != "clean":
        return []
    objs = _simple_deployment(GANG_SCHEDULER_NAME, "scheduler-plugins",
                              "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", replicas=1, cpu="100m",
                              memory="256Mi", placer=placer, days=60,
                              args=["--config=/etc/kubernetes/scheduler-config.yaml"])
    cm = obj("v1", "ConfigMap", "scheduler-config", "scheduler-plugins", created=ago(days=90))
    cm["data"] = {"scheduler-config.yaml": _SCHEDULER_CONFIG}
    return objs + [cm]
