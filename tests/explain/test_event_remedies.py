"""`why --event` remedies: counted nouns ("1 node says", "3 nodes say"), never "node(s)"."""

from kubegpu.explain.event_remedies import event_remedies
from kubegpu.scheduling.message import parse_event_message


def _summaries(text: str) -> list[str]:
    return [r["summary"] for r in event_remedies(parse_event_message(text))]


def test_one_node_says_and_several_nodes_say():
    out = _summaries("0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient nvidia.com/gpu.")
    assert out == ['1 node says "node(s) were unschedulable": uncordon the node if the cordon is no longer needed',
                   '3 nodes say "Insufficient nvidia.com/gpu": nvidia.com/gpu: make room: move or preempt pods on a '
                   'node, ask for less, or add a node']


def test_several_cordoned_nodes_are_the_nodes():
    (summary,) = _summaries("0/2 nodes are available: 2 node(s) were unschedulable.")
    assert summary.startswith('2 nodes say "node(s) were unschedulable": uncordon the nodes if')


def test_no_summary_says_node_s():
    text = ("0/9 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 node(s) didn't match Pod's node "
            "affinity/selector, 1 node(s) were unschedulable, 5 Insufficient {cpu}.")
    assert not [s for s in _summaries(text) if "(s) say" in s or "the node(s)" in s]
