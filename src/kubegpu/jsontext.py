"""kubegpu's JSON text: plain data and pretty JSON (2-space indent), as a sequence of chunks.

The encoding half of the one output writer: `kubegpu.cli.render` writes these chunks to stdout or
a file, and `kubegpu serve` answers /api/X with the same bytes, so `/api/X` is exactly
`kubegpu X -o json`. A top-level module (like `errors`) so that cli and web both use it without
web importing cli.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import msgspec

_ENCODER = msgspec.json.Encoder()


def to_plain(data: Any) -> Any:
    """Structs, tuples and sets to plain JSON-able data."""
    return msgspec.to_builtins(data)  # keeps field and key order as the engines built them


def _json_value(value: Any, indent: str) -> bytes:
    text = msgspec.json.format(_ENCODER.encode(value), indent=2)
    return text.replace(b"\n", b"\n" + indent.encode()) if indent else text


def json_chunks(data: Any) -> Iterator[bytes]:
    """Pretty JSON (2-space indent) as chunks: one per list item or top-level key."""
    if isinstance(data, (list, tuple)):
        yield from json_list_chunks(data)
    elif isinstance(data, dict) and data:
        yield b"{\n"
        last = len(data) - 1
        for i, (key, value) in enumerate(data.items()):
            sep = b",\n" if i < last else b"\n"
            head = b"  " + _ENCODER.encode(str(key)) + b": "
            if isinstance(value, (list, tuple)) and value:  # a long list (nodes, findings): item by item
                yield head + b"[\n"
                for j, item in enumerate(value):
                    yield b"    " + _json_value(item, "    ") + (b",\n" if j < len(value) - 1 else b"\n")
                yield b"  ]" + sep
            else:
                yield head + _json_value(value, "  ") + sep
        yield b"}\n"
    else:
        yield _json_value(data, "") + b"\n"


def json_list_chunks(items: Iterable[Any]) -> Iterator[bytes]:
    """A JSON list streamed item by item; identical to formatting the whole list at once."""
    first = True
    for item in items:
        yield (b"[\n  " if first else b",\n  ") + _json_value(item, "  ")
        first = False
    yield b"[]\n" if first else b"\n]\n"


def top_plain(data: Any) -> Any:
    """Structs to plain data, keeping a top-level list/dict shallow so its parts encode one by one."""
    if isinstance(data, msgspec.Struct):
        return to_plain(data)
    return data


def json_bytes(data: Any) -> bytes:
    """The whole JSON text `kubegpu X -o json` writes for `data` (only for results held in memory)."""
    return b"".join(json_chunks(top_plain(data)))


def dump_json(data: Any) -> str:
    """The whole JSON text (only for small results; commands use `emit`)."""
    return b"".join(json_chunks(data)).decode()


def error_body(code: int, message: str) -> bytes:
    """The body of every error `kubegpu serve` answers: {"error": message, "code": code} and a newline."""
    return _ENCODER.encode({"error": message, "code": code}) + b"\n"


def compact(data: Any) -> bytes:
    """One-line JSON and a newline, for small HTTP bodies such as /readyz."""
    return _ENCODER.encode(to_plain(data)) + b"\n"
