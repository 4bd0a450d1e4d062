"""Streaming log reader and line normalisation for NCCL / PyTorch logs.

Logs arrive from `kubectl logs`, Ray, MPI launchers and CI systems: plain or gzip'ed, CRLF or
LF, with ANSI colour codes (or their residue, `[0m`, when ESC was stripped), invalid UTF-8 and
tqdm-style carriage returns. `read_lines` streams them one line at a time (a 2 GB log never
sits in memory) and yields clean text with the line number an editor would show.
`line_origin` pulls host, pid and rank out of whatever prefix a line carries.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kubegpu.errors import InputError

STDIN_NAME = "-"
_GZIP_MAGIC = b"\x1f\x8b"

# Real escape sequences (CSI, OSC, two-byte) and the residue left when ESC itself was dropped.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
                   r"|\x1b[@-Z\\-_]|\[\d{1,3}(?:;\d{1,3})*m")

# NCCL's own prefix: "<host>:<pid>:<tid> [<cudaDev>]" (the host may be absent in old builds).
_NCCL_PREFIX = re.compile(r"(?:^|[\s\]>|:])(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]")
_RANK_PREFIXES = (
    re.compile(r"\[rank(?P<rank>\d+)\]"),                       # torchrun --tee / log prefixes
    re.compile(r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\]"),        # ProcessGroupNCCL messages
    re.compile(r"\[\d+,(?P<rank>\d+)\]<std(?:out|err)>"),        # Open MPI --tag-output
    re.compile(r"\brank (?P<rank>\d+) nranks \d+"),              # NCCL comm init lines
)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One normalised line: which file, which (1-based) line, and the clean text."""

    file: str
    number: int
    text: str


@dataclass(frozen=True, slots=True)
class Origin:
    """Who printed a line, as far as its prefix tells."""

    host: str | None = None
    pid: int | None = None
    rank: int | None = None


def normalize(raw: str) -> list[str]:
    """Clean one physical line; a tqdm-style `\\r` splits it into the segments a terminal showed."""
    text = _ANSI.sub("", raw.rstrip("\r\n").replace("\x00", ""))
    if "\r" not in text:
        stripped = text.strip()
        return [stripped] if stripped else []
    return [seg.strip() for seg in text.split("\r") if seg.strip()]


def line_origin(text: str) -> Origin:
    """Host/pid from NCCL's prefix and the rank from launcher or PyTorch prefixes."""
    host = pid = rank = None
    m = _NCCL_PREFIX.search(text)
    if m:
        host, pid = m["host"], int(m["pid"])
    for rx in _RANK_PREFIXES:
        r = rx.search(text)
        if r:
            rank = int(r["rank"])
            break
    return Origin(host=host, pid=pid, rank=rank)


def _open_binary(name: str) -> BinaryIO:
    if name == STDIN_NAME:
        return sys.stdin.buffer
    path = Path(name)
    if path.is_dir():
        raise InputError("is a directory, not a log file", where=name)
    return path.open("rb")


def _text_stream(raw: BinaryIO) -> io.TextIOWrapper:
    """Wrap a byte stream, transparently un-gzipping it; split on \\n only so numbers match editors."""
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    source: BinaryIO = buffered
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        source = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
    return io.TextIOWrapper(source, encoding="utf-8", errors="replace", newline="\n")


def read_lines(name: str) -> Iterator[LogLine]:
    """Stream the normalised lines of one log (`-` is stdin); unreadable input is an InputError.

    Memory stays bounded by the longest line, whatever the file size.
    """
    try:
        raw = _open_binary(name)
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("no such file", where=name) from None
    except PermissionError:
        raise InputError("permission denied", where=name) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", where=name) from None
    label = "<stdin>" if name == STDIN_NAME else name
    stream = _text_stream(raw)
    try:
        for number, physical in enumerate(stream, start=1):
            for text in normalize(physical):
                yield LogLine(label, number, text)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError(f"corrupt or truncated gzip data: {exc}", where=name) from None
    except OSError as exc:
        raise InputError(f"read failed: {exc.strerror or exc}", where=name) from None
    finally:
        if name != STDIN_NAME:
            stream.close()
        else:
            stream.detach()
