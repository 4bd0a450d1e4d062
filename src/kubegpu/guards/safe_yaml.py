"""Safe YAML loading that also refuses alias bombs ("billion laughs").

PyYAML's safe loader never runs code, but aliases still let a 1 KB file expand into billions of
nodes once converted. We compose the node graph first and count its expanded size.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kubegpu.errors import InputError
from kubegpu.guards.bounded import read_bounded
from kubegpu.model.integers import MAX_INT_CHARS, shown

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_EXPANDED_NODES = 20_000_000


_INT_TAG = "tag:yaml.org,2002:int"


def _expanded_size(node: yaml.Node, memo: dict[int, int], where: str) -> int:
    """Nodes after alias expansion; refuses on the way an integer too long to convert (thousands of digits)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards against recursive aliases
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, memo, where) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo, where) + _expanded_size(v, memo, where) for k, v in node.value)
    elif node.tag == _INT_TAG and len(node.value) > MAX_INT_CHARS:
        raise InputError(f"line {node.start_mark.line + 1}: integer {shown(node.value)} is too long "
                         f"(at most {MAX_INT_CHARS} characters)", where=where)
    memo[key] = size
    return size


_FLAT_PAIR = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")
_INDENT = re.compile(r"^[ \t]{1000,}", re.M)
MAX_FLOW_DEPTH = 64


def _may_nest_deeply(text: str) -> bool:
    """True when the text might nest deeper than the C loader survives (it recurses in C).

    Flow brackets are peeled one level per pass (real manifests need two or three passes);
    block nesting that deep needs lines indented by a thousand columns.
    """
    if _INDENT.search(text):
        return True
    for _ in range(MAX_FLOW_DEPTH):
        text, n = _FLAT_PAIR.subn("", text)
        if not n:
            return False
    return True


def load_yaml_documents(text: str | bytes, *, where: str) -> list[Any]:
    """Every document of a YAML stream, as plain Python data; InputError on any problem.

    Input that may nest deeply is read by the pure-Python loader, whose recursion ends in a
    RecursionError (reported) instead of a crash of the C loader.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8", errors="strict")
        except UnicodeDecodeError as err:
            raise InputError(f"not UTF-8 text (byte {err.start})", where=where) from None
    loader_class = yaml.SafeLoader if _may_nest_deeply(text) else _Loader
    try:
        loader = loader_class(text)
        try:
            docs = []
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    continue
                if _expanded_size(node, {}, where) > MAX_EXPANDED_NODES:
                    raise InputError("YAML aliases expand to too many nodes (alias bomb?)", where=where)
                docs.append(loader.construct_document(node))
            return docs
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"malformed YAML{at}: {err.problem or err}", where=where) from None
    except RecursionError:
        raise InputError("YAML nested too deeply to read", where=where) from None
    except (yaml.YAMLError, ValueError, TypeError) as err:
        raise InputError(f"malformed YAML: {' '.join(str(err).split())}", where=where) from None


def load_yaml_file(path: str, *, where: str | None = None, max_bytes: int) -> list[Any]:
    """Every document of a YAML file, read within `max_bytes` (and, for a FIFO, in bounded time)."""
    where = where or str(path)
    return load_yaml_documents(read_bounded(path, where=where, max_bytes=max_bytes), where=where)
