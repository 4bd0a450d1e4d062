"""NCCL log analysis: which transport a job really used, and why a job failed.

`analyze_files(paths)` streams NCCL_DEBUG=INFO/WARN output and PyTorch ProcessGroupNCCL
messages (any prefix, CRLF, ANSI, gzip, stdin) into an `NcclReport`; the signature catalog in
`kubegpu.nccl.signatures` holds every finding's regex, cause and fix.
"""

from kubegpu.nccl.analyze import analyze_files, analyze_lines
from kubegpu.nccl.report import Evidence, Finding, NcclReport
from kubegpu.nccl.signatures import SIGNATURES, Signature

__all__ = ["analyze_files", "analyze_lines", "Evidence", "Finding", "NcclReport", "SIGNATURES", "Signature"]
