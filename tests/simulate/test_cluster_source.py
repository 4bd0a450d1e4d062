"""The initial state from a cluster source: node groups and flags from cluster-autoscaler's own args."""

import json

from click.testing import CliRunner

from kubegpu.cli.options import SourceOptions, load_state
from kubegpu.cli.simulate import simulate
from kubegpu.simulate.cluster_source import cluster_overrides
from kubegpu.simulate.scenario import load_scenario


def demo_state():
    return load_state(SourceOptions(demo="pitfalls", snapshots=(), kubeconfig=None, context=None, namespace=None,
                                    all_namespaces=False, k8s_version=None))


def test_node_groups_and_flags_come_from_the_cluster_autoscaler_deployment():
    state = demo_state()
    overrides, running = cluster_overrides(state)
    groups = overrides["cluster.node_groups"]
    # the demo's CA runs with --nodes=2:4:gpu-inference --nodes=4:12:training-mixed --nodes=3:30:general
    assert {name: (g["min"], g["max"], g["initial"]) for name, g in groups.items()} == {
        "gpu-inference": (2, 4, 4), "training-mixed": (4, 12, 12), "general": (3, 30, 24)}
    assert groups["gpu-inference"]["gpus"] == 8 and "nvidia.com/gpu=present:NoSchedule" in groups["gpu-inference"]["taints"]
    sc = load_scenario("seed-preemption", ["workload.generators=[]"], base=overrides)
    assert sc.autoscaler.scale_down_utilization_threshold == 0.7
    assert sc.autoscaler.scale_down_delay_after_add == 600
    running_gpus = sum(j.task.num_gpu for j in running)
    bound_gpus = sum(state.gpu_demand(p, p.spec.node_name).num_gpu for p in state.pods
                     if p.spec.node_name and not p.is_terminal)
    assert running_gpus == bound_gpus > 0


def test_run_from_the_demo_cluster_keeps_its_pods_running():
    out = CliRunner().invoke(simulate, ["run", "--scenario", "seed-preemption", "--set", "duration=1h",
                                        "--set", "workload.generators=[]", "--demo", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [g["name"] for g in data["autoscaler"]["groups"]] == ["gpu-inference", "training-mixed", "general"]
    assert data["pods"]["by_class"]["running"]["pods"] > 0
    assert data["utilization"]["allocation_mean"] > 0.5
