"""The kube-scheduler extender wire types (k8s.io/kube-scheduler/extender/v1), as msgspec structs.

The Go types carry no JSON tags, so the keys on the wire are the Go field names, capitalised
(`Pod`, `NodeNames`, `FailedNodes`, `Host`, `Score`, ...); kube-scheduler sends exactly these.
The Pod and Node objects inside are ordinary v1 JSON and stay raw here: the request edge
decodes the Pod with the model's decoder and reads only the names of the Nodes.
A nil Go pointer, map or slice arrives as `null`, so every field accepts null.
"""

from __future__ import annotations

import msgspec
import numpy as np

MIN_EXTENDER_PRIORITY = 0    # upstream extender/v1 MinExtenderPriority
MAX_EXTENDER_PRIORITY = 10   # upstream extender/v1 MaxExtenderPriority
MAX_NODE_SCORE = 100         # upstream framework.MaxNodeScore: a Score counts Score x weight x 100/10


class _Meta(msgspec.Struct):
    name: str = ""


class _NodeHead(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class NodeList(msgspec.Struct):
    """A v1 NodeList; items stay raw (only their names are read, and a filter reply echoes them)."""

    items: list[msgspec.Raw] | None = None


class ExtenderArgs(msgspec.Struct):
    """filter and prioritize arguments: the pod and the nodes (NodeNames when nodeCacheCapable).

    NodeNames stays raw: kube-scheduler sends the same list again and again (all feasible nodes
    in its own order), so the extender resolves a list once per generation and remembers it by
    its bytes (`ExtenderModel.node_names`)."""

    Pod: msgspec.Raw = msgspec.Raw(b"null")
    Nodes: NodeList | None = None
    NodeNames: msgspec.Raw = msgspec.Raw(b"null")


class ExtenderFilterResult(msgspec.Struct, omit_defaults=False):
    """filter reply. upstream HTTPExtender.Filter reads NodeNames only when nodeCacheCapable and
    Nodes otherwise, so the reply uses the form the request used: names for names, the request's
    own Node objects for a NodeList."""

    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = {}
    FailedAndUnresolvableNodes: dict[str, str] = {}
    Error: str = ""


class HostPriority(msgspec.Struct):
    """One entry of the HostPriorityList (a top-level JSON array)."""

    Host: str
    Score: int


class MetaPod(msgspec.Struct):
    UID: str = ""


class MetaVictims(msgspec.Struct):
    Pods: list[MetaPod] | None = None
    NumPDBViolations: int = 0


class VictimPodMeta(msgspec.Struct):
    uid: str = ""
    name: str = ""
    namespace: str = ""


class VictimPod(msgspec.Struct):
    """A v1 Pod of `Victims.Pods`, read for its identity only."""

    metadata: VictimPodMeta = msgspec.field(default_factory=VictimPodMeta)


class Victims(msgspec.Struct):
    Pods: list[VictimPod] | None = None
    NumPDBViolations: int = 0


class ExtenderPreemptionArgs(msgspec.Struct):
    """preempt arguments: NodeNameToMetaVictims when nodeCacheCapable, else NodeNameToVictims."""

    Pod: msgspec.Raw = msgspec.Raw(b"null")
    NodeNameToVictims: dict[str, Victims] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims] | None = None


class ExtenderPreemptionResult(msgspec.Struct):
    NodeNameToMetaVictims: dict[str, MetaVictims] = {}


def has_node_names(args: ExtenderArgs) -> bool:
    return bytes(memoryview(args.NodeNames)[:4]) != b"null"


def decode_node_names(raw: bytes) -> list[str]:
    return _NAMES.decode(raw)


def request_node_names(args: ExtenderArgs) -> list[str]:
    """The node names of a filter/prioritize request, whichever of the two forms it used."""
    if has_node_names(args):
        return decode_node_names(args.NodeNames)
    if args.Nodes is not None and args.Nodes.items is not None:
        return [_NODE_HEAD.decode(item).metadata.name for item in args.Nodes.items]
    return []


_NODE_HEAD = msgspec.json.Decoder(_NodeHead)
_NAMES = msgspec.json.Decoder(list[str])
ARGS_DECODER = msgspec.json.Decoder(ExtenderArgs)
PREEMPT_DECODER = msgspec.json.Decoder(ExtenderPreemptionArgs)
ENCODER = msgspec.json.Encoder()


def host_records(name_bytes: list[bytes]) -> np.ndarray:
    """uint8[n, W]: `{"Host":<name>,"Score":` per node, padded with spaces (JSON whitespace) to one width."""
    heads = [b'{"Host":' + nb + b',"Score":' for nb in name_bytes]
    width = max((len(h) for h in heads), default=0)
    out = np.full((len(heads), width), ord(" "), dtype=np.uint8)
    for i, h in enumerate(heads):
        out[i, :len(h)] = np.frombuffer(h, dtype=np.uint8)
    return out


_SCORE_TAILS = np.frombuffer(b"".join(b"%2d}," % s for s in range(MAX_EXTENDER_PRIORITY + 1)),
                             dtype=np.uint8).reshape(MAX_EXTENDER_PRIORITY + 1, 4)


def gather_host_priorities(records: np.ndarray, idx: np.ndarray, scores: np.ndarray) -> bytes:
    """A HostPriorityList array for nodes `idx` (rows of `host_records`) with 0-10 `scores`, without a
    Python loop over nodes: one gather of fixed-width records."""
    if not len(idx):
        return b"[]"
    body = np.concatenate([records[idx], _SCORE_TAILS[scores]], axis=1).tobytes()
    return b"[" + body[:-1] + b"]"


class ByteCatalog:
    """Pre-encoded JSON pieces in one buffer; `gather(ids)` concatenates pieces without a Python loop."""

    def __init__(self, items: list[bytes]) -> None:
        self.lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        self.starts = np.cumsum(self.lens) - self.lens
        self.buf = np.frombuffer(b"".join(items), dtype=np.uint8)

    def extended(self, items: list[bytes]) -> "ByteCatalog":
        """This catalog with `items` appended (their ids follow this catalog's)."""
        out = object.__new__(ByteCatalog)
        extra = ByteCatalog(items)
        out.lens = np.concatenate([self.lens, extra.lens])
        out.starts = np.concatenate([self.starts, extra.starts + len(self.buf)])
        out.buf = np.concatenate([self.buf, extra.buf])
        return out

    def gather(self, ids: np.ndarray) -> bytes:
        if not len(ids):
            return b""
        lens = self.lens[ids]
        offsets = np.cumsum(lens) - lens
        src = np.repeat(self.starts[ids] - offsets, lens) + np.arange(int(lens.sum()))
        return self.buf[src].tobytes()


def name_catalogs(name_bytes: list[bytes]) -> tuple[ByteCatalog, ByteCatalog]:
    """(`"name":` per node, `"name",` per node): the keys of FailedNodes and the items of NodeNames."""
    return ByteCatalog([nb + b":" for nb in name_bytes]), ByteCatalog([nb + b"," for nb in name_bytes])


def gather_filter_result(keys: ByteCatalog, items: ByteCatalog, passed: np.ndarray, soft: np.ndarray,
                         soft_text: np.ndarray, hard: np.ndarray, hard_text: np.ndarray, texts: list[str]) -> bytes:
    """An ExtenderFilterResult with NodeNames (node indices `passed`) and the two failure maps (node
    indices with an index into `texts` each), gathered from pre-encoded pieces."""
    n = len(keys.lens)
    both = keys.extended([msgspec.json.encode(t) + b"," for t in texts])

    def pairs(nodes: np.ndarray, text: np.ndarray) -> bytes:
        ids = np.empty(2 * len(nodes), dtype=np.int64)
        ids[0::2] = nodes
        ids[1::2] = n + text
        return both.gather(ids)[:-1]

    return (b'{"Nodes":null,"NodeNames":[' + items.gather(passed)[:-1] + b'],"FailedNodes":{' + pairs(soft, soft_text)
            + b'},"FailedAndUnresolvableNodes":{' + pairs(hard, hard_text) + b'},"Error":""}')
