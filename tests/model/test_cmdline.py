"""The one command-line flag reader (cluster-autoscaler args for audit and simulate), as Go's flag package reads."""

from kubegpu.model.cmdline import command_flags


def test_equals_space_and_bare_forms():
    args = ["./cluster-autoscaler", "--v=4", "--scale-down-delay-after-add", "10m", "--skip-nodes-with-local-storage",
            "--expander=least-waste"]
    assert command_flags(args) == {"v": "4", "scale-down-delay-after-add": "10m",
                                   "skip-nodes-with-local-storage": "true", "expander": "least-waste"}


def test_the_last_value_wins_and_nodes_accumulate():
    args = ["--scale-down-unneeded-time=5m", "--nodes=1:10:gpu", "--scale-down-unneeded-time=20m", "--nodes", "0:5:cpu"]
    assert command_flags(args) == {"scale-down-unneeded-time": "20m", "nodes": "1:10:gpu 0:5:cpu"}


def test_a_boolean_flag_never_swallows_the_next_argument():
    args = ["--scale-down-delay-type-local", "extra", "--expander", "priority"]
    assert command_flags(args, bool_flags=["scale-down-delay-type-local"]) == {
        "scale-down-delay-type-local": "true", "expander": "priority"}
    assert command_flags(args)["scale-down-delay-type-local"] == "extra"
