"""The suite's one in-process CLI runner: `kubegpu ARGS` through cli.main.main with stdout and stderr
captured, SystemExit turned into an exit code. For tests of what a command says or writes, where the
real process (its start-up, signals, pipes, terminal) is not the subject; it saves a Python start and
kubegpu's imports per call. Tests of the process itself spawn it (`run_kubegpu`, `run_tty`, `popen`)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def returncode(self) -> int:  # as subprocess.CompletedProcess names it
        return self.code

    @property
    def err_lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def run_inprocess(*args: str) -> Result:
    from kubegpu.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())
