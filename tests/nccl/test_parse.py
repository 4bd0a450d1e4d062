"""Reading logs as they arrive in practice: prefixes, CRLF, ANSI, bad bytes, gzip, stdin, and
inputs that cannot be read."""

from __future__ import annotations

import gzip
import io
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.errors import InputError
from kubegpu.nccl import analyze_files
from kubegpu.nccl.parse import line_origin, normalize, read_lines

IB_RUN = (
    "gpu-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "gpu-a:100:120 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>\n"
    "gpu-a:100:120 [0] NCCL INFO Using network IB\n"
    "gpu-a:100:120 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
)


def test_normalize_strips_ansi_residue_crlf_and_splits_carriage_returns():
    assert normalize("\x1b[32mgpu:1:2 [0] NCCL INFO x\x1b[0m\r\n") == ["gpu:1:2 [0] NCCL INFO x"]
    assert normalize("[0m ip-1:2:3 [0] NCCL INFO y\n") == ["ip-1:2:3 [0] NCCL INFO y"]
    assert normalize("10%|#  |\r50%|### |\rgpu:1:2 [0] NCCL WARN z\n") == ["10%|#  |", "50%|### |", "gpu:1:2 [0] NCCL WARN z"]
    assert normalize("   \r\n") == []


@pytest.mark.parametrize(("line", "host", "pid", "rank"), [
    ("testgpu2:3255:3262 [1] NCCL INFO Using network IB", "testgpu2", 3255, None),
    ("[80746] [rank3]:[E321 02:07:08] [Rank 3] Watchdog caught", None, None, 3),
    ("[1,5]<stdout>:smc-gpu-03:29883:30404 [0] NCCL WARN x", "smc-gpu-03", 29883, 5),
    ("[pod/train-worker-1/pytorch] train-worker-1:57:57 [0] NCCL INFO Bootstrap : Using eth0:10.1.1.1<0>",
     "train-worker-1", 57, None),
    ("2024-05-01T10:00:00.123Z w-0:9:9 [2] NCCL INFO comm 0x55 rank 6 nranks 16 cudaDev 2 busId 1c000 - Init COMPLETE",
     "w-0", 9, 6),
])
def test_line_origin_reads_any_prefix(line, host, pid, rank):
    origin = line_origin(line)
    assert (origin.host, origin.pid, origin.rank) == (host, pid, rank)


def test_prefix_noise_crlf_ansi_and_invalid_utf8_do_not_change_the_answer(tmp_path):
    noisy = tmp_path / "noisy.log"
    body = b""
    for i, line in enumerate(IB_RUN.splitlines()):
        body += (f"2025-01-01T00:00:0{i}Z [pod/job-w-0/main] \x1b[0;36m[rank0]:".encode()
                 + line.encode() + b"\x1b[0m \xff\xfe\r\n")
    noisy.write_bytes(body)
    clean = tmp_path / "clean.log"
    clean.write_text(IB_RUN)
    a, b = analyze_files([str(noisy)]), analyze_files([str(clean)])
    assert (a.transport, a.gdr, [h.name for h in a.hcas]) == (b.transport, b.gdr, [h.name for h in b.hcas])
    assert (a.transport, a.gdr) == ("IB", True)
    assert a.files[0].lines == 4 and a.files[0].nccl_lines == 4


def test_gzip_is_detected_by_content_not_name(tmp_path):
    packed = tmp_path / "run.log"  # no .gz suffix on purpose
    packed.write_bytes(gzip.compress(IB_RUN.encode()))
    report = analyze_files([str(packed)])
    assert report.transport == "IB" and report.gdr is True


def test_stdin_dash(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(IB_RUN.encode())))
    report = analyze_files(["-"])
    assert report.transport == "IB"
    assert report.files[0].path == "<stdin>"


def test_line_numbers_match_an_editor(tmp_path):
    log = tmp_path / "n.log"
    log.write_bytes(b"a\r\n\r\nprogress\rmore\n" + b"h:1:2 [0] NCCL WARN Failed to open libibverbs.so[.1]\r\n")
    lines = list(read_lines(str(log)))
    assert [(l.number, l.text) for l in lines] == [(1, "a"), (3, "progress"), (3, "more"),
                                                  (4, "h:1:2 [0] NCCL WARN Failed to open libibverbs.so[.1]")]


def test_missing_file_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "nope.log"
    with pytest.raises(InputError) as err:
        analyze_files([str(missing)])
    assert str(missing) in str(err.value) and "no such file" in str(err.value)


def test_directory_and_corrupt_gzip_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="directory"):
        analyze_files([str(tmp_path)])
    broken = tmp_path / "cut.log.gz"
    broken.write_bytes(gzip.compress(IB_RUN.encode() * 50)[:60])
    with pytest.raises(InputError, match="gzip") as err:
        analyze_files([str(broken)])
    assert str(broken) in str(err.value)


def test_unreadable_file_is_an_input_error(tmp_path):
    import os
    log = tmp_path / "secret.log"
    log.write_text(IB_RUN)
    log.chmod(0)
    if os.access(log, os.R_OK):  # running as root: permissions are not enforced
        pytest.skip("file permissions are not enforced for this user")
    with pytest.raises(InputError, match="permission denied"):
        analyze_files([str(log)])


def test_stdin_twice_and_no_files_are_input_errors():
    with pytest.raises(InputError):
        analyze_files(["-", "-"])
    with pytest.raises(InputError):
        analyze_files([])


def test_a_file_far_larger_than_its_interesting_part_streams(tmp_path):
    log = tmp_path / "big.log"
    with log.open("w") as fh:
        fh.write(IB_RUN)
        filler = "step 123 loss 1.2345 lr 3e-4 throughput 1234.5 samples/s grad_norm 0.98\n"
        for _ in range(20):
            fh.write(filler * 5000)
        fh.write("[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
                 "milliseconds before timing out.\n")
    report = analyze_files([str(log)])
    assert report.files[0].lines == 4 + 100_000 + 1
    assert report.transport == "IB"
    assert report.findings[0].id == "collective-timeout"
    assert report.findings[0].evidence[0].line == 100_005


@settings(max_examples=60, deadline=None)
@given(prefix=st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40),
       junk=st.binary(max_size=200))
def test_any_prefix_keeps_the_classification_and_junk_never_crashes(tmp_path_factory, prefix, junk):
    folder = tmp_path_factory.mktemp("h")
    log = folder / "h.log"
    # A space between the prefix and NCCL's own "host:pid:tid" keeps them separate tokens, as every launcher does.
    tagged = "".join(f"{prefix} {line}\n" for line in IB_RUN.splitlines())
    log.write_bytes(b"\n" + junk + b"\n" + tagged.encode("utf-8", "replace"))  # never starts as gzip
    report = analyze_files([str(log)])
    assert report.transport == "IB" and report.gdr is True


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_block_boundaries_do_not_change_lines_or_numbers(tmp_path, monkeypatch, chunk):
    import kubegpu.nccl.parse as parse

    text = "noise line\n" * 3 + IB_RUN + "x" * 150 + "\n" + "tail without newline NCCL INFO Using network IB"
    log = tmp_path / "b.log"
    log.write_text(text)
    expected = [(n, t) for n, t in enumerate(text.split("\n"), start=1) if t]
    monkeypatch.setattr(parse, "_CHUNK_CHARS", chunk)
    assert [(l.number, l.text) for l in parse.read_lines(str(log))] == expected
    reader = parse.LogReader(str(log), ("NCCL",))
    gated = [(l.number, l.text) for l in reader]
    assert gated == [(n, t) for n, t in expected if "NCCL" in t]
    assert reader.lines == len(text.split("\n"))


def test_an_endless_line_is_cut_not_buffered_forever(tmp_path, monkeypatch):
    import kubegpu.nccl.parse as parse

    monkeypatch.setattr(parse, "_CHUNK_CHARS", 100)
    monkeypatch.setattr(parse, "_MAX_LINE_CHARS", 1000)
    log = tmp_path / "long.log"
    log.write_text("y" * 50_000 + "\n" + IB_RUN)
    report = analyze_files([str(log)])
    assert report.transport == "IB"
