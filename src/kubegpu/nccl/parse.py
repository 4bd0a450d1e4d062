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
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kubegpu.errors import InputError
from kubegpu.model.integers import parse_int
from kubegpu.guards.bounded import open_bounded, path_text

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

    @property
    def where(self) -> str:
        """'file:line', as errors name a line."""
        return f"{self.file}:{self.number}"


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


def line_origin(text: str, where: str | None = None) -> Origin:
    """Host/pid from NCCL's prefix and the rank from launcher or PyTorch prefixes.

    `where` ("file:line") names the line when a number is beyond int64 (InputError).
    """
    host = pid = rank = None
    m = _NCCL_PREFIX.search(text)
    if m:
        host, pid = m["host"], parse_int(m["pid"], where=where, field="pid")
    for rx in _RANK_PREFIXES:
        r = rx.search(text)
        if r:
            rank = parse_int(r["rank"], where=where, field="rank")
            break
    return Origin(host=host, pid=pid, rank=rank)


# A training log of many days can be tens of GiB; beyond this an input has no end (/dev/zero).
MAX_LOG_BYTES = 64 * 1024**3


def _open_binary(name: str) -> BinaryIO:
    if name != STDIN_NAME and Path(name).is_dir():
        raise InputError("is a directory, not a log file", where=path_text(name))
    # bounded in size, and in time for stdin, FIFOs and devices (guards.bounded)
    return open_bounded(name, where="<stdin>" if name == STDIN_NAME else path_text(name), max_bytes=MAX_LOG_BYTES)


def _text_stream(raw: BinaryIO) -> io.TextIOWrapper:
    """Wrap a byte stream, transparently un-gzipping it; split on \\n only so numbers match editors."""
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    source: BinaryIO = buffered
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        source = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
    return io.TextIOWrapper(source, encoding="utf-8", errors="replace", newline="\n")


_CHUNK_CHARS = 1 << 22       # ~4 MiB of text per block
_MAX_LINE_CHARS = 1 << 24    # a line longer than this is split (numbered as extra lines), bounding memory


class LogReader:
    """Stream one log (`-` is stdin) as normalised `LogLine`s; unreadable input is an InputError.

    With `anchors`, only lines containing one of those literal strings are decoded into
    LogLines: the search runs over 4 MiB blocks with str.find, so the uninteresting bulk of a
    multi-gigabyte training log costs almost nothing. `lines` counts every physical line read.
    Memory stays bounded by the block size, whatever the file size.
    """

    def __init__(self, name: str, anchors: tuple[str, ...] = ()) -> None:
        self.name = name
        self.label = "<stdin>" if name == STDIN_NAME else path_text(name)  # reports and errors print it
        self.anchors = anchors
        self.lines = 0

    def __iter__(self) -> Iterator[LogLine]:
        raw = self._open()
        stream = _text_stream(raw)
        try:
            yield from self._blocks(stream)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise InputError(f"corrupt or truncated gzip data: {exc}", where=self.label) from None
        except OSError as exc:
            raise InputError(f"read failed: {exc.strerror or exc}", where=self.label) from None
        finally:
            stream.close()  # for stdin this closes our bounded reader, never fd 0

    def _open(self) -> BinaryIO:
        try:
            return _open_binary(self.name)
        except InputError:
            raise
        except FileNotFoundError:
            raise InputError("no such file", where=self.label) from None
        except PermissionError:
            raise InputError("permission denied", where=self.label) from None
        except OSError as exc:
            raise InputError(f"cannot open: {exc.strerror or exc}", where=self.label) from None

    def _blocks(self, stream: io.TextIOWrapper) -> Iterator[LogLine]:
        tail = ""
        while True:
            chunk = stream.read(_CHUNK_CHARS)
            if not chunk:
                break
            if chunk.count("\0") > len(chunk) // 2:  # a log is text: this is a disk image or /dev/zero
                raise InputError("binary data (mostly NUL bytes), not a text log", where=self.label)
            data = tail + chunk
            cut = data.rfind("\n")
            if cut == -1 and len(data) < _MAX_LINE_CHARS:
                tail = data
                continue
            if cut == -1:  # an endless line: treat what we have as one line and go on
                block, tail = data + "\n", ""
            else:
                block, tail = data[: cut + 1], data[cut + 1:]
            yield from self._scan_block(block)
        if tail:
            yield from self._scan_block(tail + "\n")

    def _scan_block(self, block: str) -> Iterator[LogLine]:
        """Yield the block's (candidate) lines; `block` ends with a newline."""
        base = self.lines
        self.lines += block.count("\n")
        if not self.anchors:
            for offset, physical in enumerate(block[:-1].split("\n"), start=base + 1):
                for text in normalize(physical):
                    yield LogLine(self.label, offset, text)
            return
        starts: set[int] = set()
        for anchor in self.anchors:
            hit = block.find(anchor)
            while hit != -1:
                starts.add(block.rfind("\n", 0, hit) + 1)
                hit = block.find(anchor, block.find("\n", hit))
        number, previous = base, 0
        for start in sorted(starts):
            number += block.count("\n", previous, start)
            previous = start
            for text in normalize(block[start: block.find("\n", start)]):
                yield LogLine(self.label, number + 1, text)


def read_lines(name: str) -> Iterator[LogLine]:
    """Every normalised line of one log (`-` is stdin); see `LogReader` for the gated form."""
    return iter(LogReader(name))
