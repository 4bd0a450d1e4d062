"""Run the real CLI: in a pipe, or on a pseudo-terminal of a given width."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          timeout=180, input=stdin)


def run_tty(columns: int, *args: str) -> str:
    """The output of `kubegpu ARGS` on a pseudo-terminal COLUMNS wide (ANSI codes stripped)."""
    import re

    env = dict(os.environ, COLUMNS=str(columns), LINES="60", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.execvpe(sys.executable, [sys.executable, "-m", "kubegpu.cli.main", *args], env)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    os.close(fd)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
