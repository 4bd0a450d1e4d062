"""Public entry points: analyse NCCL / PyTorch logs from files (or stdin) into an `NcclReport`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kubegpu.errors import InputError
from kubegpu.nccl.diagnose import build_report
from kubegpu.nccl.parse import STDIN_NAME, LogLine, LogReader
from kubegpu.nccl.report import FileSummary, NcclReport
from kubegpu.nccl.scan import ANCHORS, LogScan, passes_gate


def analyze_lines(lines: Iterable[LogLine]) -> NcclReport:
    """Analyse already-normalised lines (tests, or callers with their own reader)."""
    scan = LogScan()
    per_file: dict[str, list[int]] = {}
    for line in lines:
        counts = per_file.setdefault(line.file, [0, 0])
        counts[0] = line.number
        before = scan.nccl_lines
        if passes_gate(line.text):
            scan.feed(line)
        counts[1] += scan.nccl_lines - before
    files = [FileSummary(path=p, lines=c[0], nccl_lines=c[1]) for p, c in per_file.items()]
    return build_report(scan, files)


def analyze_files(paths: Sequence[str]) -> NcclReport:
    """Stream every log in `paths` (`-` = stdin, gzip detected by content) into one report.

    All files are read as one run, so logs of several ranks or pods can be passed together.
    Raises InputError naming the file if one cannot be read.
    """
    if not paths:
        raise InputError("no log files given")
    if sum(1 for p in paths if p == STDIN_NAME) > 1:
        raise InputError("stdin ('-') can be read only once", where=STDIN_NAME)
    scan = LogScan()
    files: list[FileSummary] = []
    for path in paths:
        nccl_before = scan.nccl_lines
        reader = LogReader(path, ANCHORS)
        for line in reader:
            scan.feed(line)
        files.append(FileSummary(path=reader.label, lines=reader.lines, nccl_lines=scan.nccl_lines - nccl_before))
    return build_report(scan, files)
