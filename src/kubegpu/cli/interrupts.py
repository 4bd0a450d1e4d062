"""Stopping well: SIGINT/SIGTERM within about a second, and a reader that goes away.

Python runs signal handlers only between bytecodes, so a command inside a long C call (a MILP
solve, one big encode) would ignore Ctrl-C until it returns. The C-level handler still writes to a
wakeup fd; a watchdog thread reads it and, if the command has not stopped on its own shortly after,
ends the worker processes the command started, removes the temp files of unfinished atomic writes
and exits with 130 (SIGINT) or 143 (SIGTERM). Nothing half-written remains: files only ever appear
by rename.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from kubegpu.cli.writer import PENDING_TEMP_FILES, raise_for
from kubegpu.errors import OutputError
from kubegpu.shutdown import held_until

GRACE_WORKERS = 0.3  # seconds after the signal: end the worker processes we started
GRACE_EXIT = 0.8  # seconds after the signal: exit even if the main thread is stuck in C code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C (exit 143 instead of 130)."""


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int | None = None) -> set[int]:
    """Every process below `pid` (default: this one), from /proc."""
    tree = _children_map()
    out: set[int] = set()
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _signal_all(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class Interrupts:
    """The signal state of one command run."""

    def __init__(self) -> None:
        self.before = descendants()  # processes that were there before (a test's server): never ours
        self.finished = threading.Event()
        self.signalled: int | None = None

    def ours(self) -> set[int]:
        return descendants() - self.before

    def end_workers(self) -> None:
        """Terminate the processes this command started, then kill what is left."""
        pids = self.ours()
        if not pids:
            return
        _signal_all(pids, signal.SIGTERM)
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline and pids & self.ours():
            time.sleep(0.02)
        _signal_all(pids & self.ours(), signal.SIGKILL)

    def watch(self, read_fd: int) -> None:
        while not self.finished.is_set():
            try:
                data = os.read(read_fd, 64)
            except OSError:
                return
            if not data or self.finished.is_set():
                return
            sigs = [b for b in data if b in (signal.SIGINT, signal.SIGTERM)]
            if sigs:
                self.signalled = sigs[-1]
                threading.Thread(target=self._deadline, daemon=True).start()

    def _deadline(self) -> None:
        if self.finished.wait(GRACE_WORKERS):
            return
        _signal_all(self.ours(), signal.SIGTERM)
        if self.finished.wait(GRACE_EXIT - GRACE_WORKERS):
            return
        while (held := held_until()) is not None and time.monotonic() < held:
            if self.finished.wait(0.05):  # cleanup in progress (kubegpu.shutdown.finishing): let it end
                return
        _signal_all(self.ours(), signal.SIGKILL)
        for tmp in list(PENDING_TEMP_FILES):
            try:
                os.unlink(tmp)
            except OSError:
                pass
        code = 143 if self.signalled == signal.SIGTERM else 130
        try:
            os.write(2, b"terminated\n" if code == 143 else b"interrupted\n")
        finally:
            os._exit(code)


_RUNNING = {"pid": None}


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _in_forked_worker() -> None:
    """A worker forked while a command runs: the parent decides when it ends.

    It ignores Ctrl-C (the terminal sends it to the whole process group; the parent ends its
    workers itself, without a traceback from each), dies quietly on SIGTERM, and does not write
    into the parent's wakeup pipe.
    """
    if _RUNNING["pid"] is None:
        return
    _RUNNING["pid"] = None
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # pragma: no cover - forked from a thread other than the main one
        pass


os.register_at_fork(after_in_child=_in_forked_worker)


@contextmanager
def on_signals() -> Iterator[Interrupts]:
    """SIGINT -> KeyboardInterrupt, SIGTERM -> Terminated, with the watchdog (main thread only)."""
    state = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    old_term = signal.signal(signal.SIGTERM, _raise_terminated)
    old_int = signal.getsignal(signal.SIGINT)
    if old_int in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except ValueError:
        old_wakeup = None
    watcher = threading.Thread(target=state.watch, args=(read_fd,), daemon=True, name="kubegpu-signals")
    watcher.start()
    _RUNNING["pid"] = os.getpid()
    try:
        yield state
    finally:
        _RUNNING["pid"] = None
        state.finished.set()
        if old_wakeup is not None:
            signal.set_wakeup_fd(old_wakeup)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int if old_int is not None else signal.default_int_handler)
        os.close(write_fd)  # the watcher's read returns b"" and it ends
        watcher.join(timeout=1)
        os.close(read_fd)


class _Guarded:
    """sys.stdout with EPIPE turned into OutputClosed and other write errors into OutputError.

    click catches a BrokenPipeError itself and exits 1 (which means "findings" to us), so the
    translation happens here, at the stream, before any layer sees an OSError.
    """

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as err:
            raise_for(err, self._name)
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise_for(err, self._name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ClosedStdout:
    """sys.stdout when fd 1 was closed at start: the first write is one error line (exit 2).

    kubectl does the same (`error: write /dev/stdout: bad file descriptor`); a command that writes
    nothing to stdout (`snapshot --file F`) still succeeds.
    """

    def write(self, text: str) -> int:
        raise OutputError("cannot write: Bad file descriptor (stdout was closed before kubegpu started)",
                          where="stdout")

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")


@contextmanager
def guarded_stdout() -> Iterator[None]:
    original = sys.stdout
    if original is None:  # fd 1 was closed before we started (`kubegpu status >&-`)
        sys.stdout = _ClosedStdout()  # type: ignore[assignment]
        try:
            yield
        finally:
            sys.stdout = original
        return
    if isinstance(original, _Guarded):
        yield
        return
    sys.stdout = _Guarded(original, "stdout")  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.stdout.__class__ is _Guarded:
            try:
                sys.stdout.flush()
            except Exception:  # noqa: BLE001 - a closed pipe at the very end changes nothing
                pass
        sys.stdout = original


def stdout_closed() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush stays quiet."""
    if sys.__stdout__ is None or getattr(sys.stdout, "_stream", sys.stdout) is not sys.__stdout__:
        return  # a captured stdout (tests): nothing to quieten
    try:
        fd = sys.__stdout__.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError):
        pass
