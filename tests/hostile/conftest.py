"""Helpers for the hostile-input suite: run the CLI in-process or as a subprocess, odd output targets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import Result

SRC = str(Path(__file__).resolve().parents[2] / "src")


def popen(*args: str, **kwargs) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", *args], env=env, **kwargs)


def run(*args: str, timeout: float = 120, stdout=subprocess.PIPE, stdin=None) -> Result:
    proc = popen(*args, stdout=stdout, stderr=subprocess.PIPE, stdin=stdin, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # a hang is a failure, and leaves no process running behind
        proc.kill()
        proc.communicate()
        raise
    return Result(proc.returncode, out or "", err)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs: writing a demo snapshot there fills it (skips when mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a size-limited tmpfs here (needs root and mount rights)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def readonly_dir(tmp_path):
    """A folder nobody can write into, not even root (a read-only tmpfs; else chmod 555 as non-root)."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(mnt)],
                          capture_output=True).returncode != 0:
            pytest.skip("root, and cannot mount a read-only tmpfs: no folder root cannot write")
        yield mnt
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    else:
        mnt.chmod(0o555)
        yield mnt
        mnt.chmod(0o755)
