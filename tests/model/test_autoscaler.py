"""One reading of the cluster's cluster-autoscaler for the audit and the simulator (model.autoscaler)."""

import pytest

from kubegpu.audit.checks.autoscaling import cluster_autoscalers
from kubegpu.audit.context import AuditContext
from kubegpu.errors import InputError
from kubegpu.model.autoscaler import find_cluster_autoscalers
from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.simulate.cluster_source import cluster_overrides


def ca_state(args, *, image="registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0", command=None):
    container = {"name": "ca", "image": image, "args": args}
    if command:
        container["command"] = command
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ca", "namespace": "kube-system"},
           "spec": {"template": {"spec": {"containers": [container]}}}}
    return ClusterState([decode_object(dep)])


@pytest.mark.parametrize("args", [["--nodes=1:5:gpu", "--scale-down-unneeded-time=20m"],
                                  ["--nodes", "1:5:gpu", "--scale-down-unneeded-time", "20m"]])
def test_flag_equals_and_flag_space_read_the_same(args):
    (ca,) = find_cluster_autoscalers(ca_state(args))
    assert [(g.name, g.min, g.max) for g in ca.node_groups()] == [("gpu", 1, 5)]
    assert ca.value("scale-down-unneeded-time") == ("20m", False)
    assert ca.value("scale-down-delay-after-add") == ("10m", True)  # upstream default


def test_a_boolean_flag_never_takes_the_next_argument_in_audit_and_simulate_alike():
    # Go's flag package: `--skip-nodes-with-local-storage false` sets true; "false" is a positional arg
    state = ca_state(["--skip-nodes-with-local-storage", "false", "--scale-down-enabled=false"])
    (audit_ca,) = cluster_autoscalers(AuditContext(state))
    overrides, _ = cluster_overrides(state)
    assert audit_ca.enabled("skip-nodes-with-local-storage") is True
    assert overrides["autoscaler.skip-nodes-with-local-storage"] == "true"
    assert audit_ca.enabled("scale-down-enabled") is False
    assert overrides["autoscaler.scale-down-enabled"] == "false"


def test_found_by_the_program_name_when_the_image_is_a_mirror():
    state = ca_state(["--nodes=0:3:pool"], image="mirror.example/ca:1", command=["./cluster-autoscaler"])
    assert len(find_cluster_autoscalers(state)) == 1
    assert find_cluster_autoscalers(state)[0].node_groups()[0].name == "pool"


@pytest.mark.parametrize("bad", ["--nodes=foo", "--nodes=5:1:pool", "--nodes=1:x:pool", "--nodes=1:5"])
def test_a_malformed_node_group_is_an_input_error_naming_the_deployment(bad):
    with pytest.raises(InputError) as err:
        cluster_overrides(ca_state([bad]))
    assert "Deployment/kube-system/ca" in str(err.value) and "MIN:MAX:NAME" in str(err.value)
    # the audit reports on the cluster: it leaves the malformed group out instead
    assert cluster_autoscalers(AuditContext(ca_state([bad])))[0].node_groups(strict=False) == ()
