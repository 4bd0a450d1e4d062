"""Files under a node's model root, reached without ever following a link kubegpu did not create.

The agent runs as root on a hostPath that pods may also write. Every path below the root is
walked one component at a time with `openat(..., O_NOFOLLOW)`, so a symbolic link planted as a
folder or as a file (a `.partial`, a staged file, a version folder) is refused, never followed,
and no path can leave the root: the names come from a validated manifest (no `..`, no `/`), and
each step is a real folder opened relative to the previous one. Files are opened non-blocking
and must be regular files (a FIFO or a device is refused, not read).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20


class UnsafePath(Exception):
    """A path below the root is a link, a FIFO, a device or otherwise not what kubegpu made there."""


def parts_of(rel: str | Path) -> list[str]:
    """The components of a relative path; refuses empty, `.`, `..` and absolute paths."""
    text = str(rel)
    parts = text.split("/")
    if text.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{text!r} is not a plain relative path below the root")
    return parts


def _refuse(root: Path, parts: list[str], what: str) -> UnsafePath:
    return UnsafePath(f"{root.joinpath(*parts)} {what}: kubegpu never follows a link it did not create "
                      "(remove it by hand)")


def open_dir(root: Path, rel: str | Path | None = None, *, create: bool = False) -> int:
    """A descriptor of ROOT/rel, every component a real folder (made with `create`); close it yourself."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root itself is the caller's choice
    parts = parts_of(rel) if rel not in (None, "") else []
    try:
        for i, name in enumerate(parts):
            if create:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as err:  # ELOOP: a link; ENOTDIR: a file where a folder belongs
                raise _refuse(root, parts[:i + 1], "is a symbolic link or not a folder") from err
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder(root: Path, rel: str | Path | None = None, *, create: bool = False) -> Iterator[int]:
    fd = open_dir(root, rel, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def split(rel: str | Path) -> tuple[str | None, str]:
    parts = parts_of(rel)
    return ("/".join(parts[:-1]) or None), parts[-1]


def kind(root: Path, rel: str | Path) -> str | None:
    """'file', 'dir', 'link' or 'other' for ROOT/rel without following anything; None when absent."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as fd:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (FileNotFoundError, UnsafePath, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link"
    return "file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"


def size_of(root: Path, rel: str | Path) -> int | None:
    """The size of the regular file ROOT/rel (None when absent, a link or not a regular file)."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as fd:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (OSError, UnsafePath):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def clear_way(root: Path, rel: str | Path) -> None:
    """Remove whatever stands where a folder of ROOT/rel's parents belongs but is not one (a planted link)."""
    parts = parts_of(rel)
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        if kind(root, prefix) not in (None, "dir"):
            remove(root, prefix)


def open_file(root: Path, rel: str | Path, flags: int = os.O_RDONLY, *, create_parents: bool = False) -> int:
    """A descriptor of the regular file ROOT/rel (flags may add O_CREAT, O_WRONLY...); never through a link."""
    parent, name = split(rel)
    with folder(root, parent, create=create_parents) as dfd:
        try:
            fd = os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=dfd)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.ENXIO):
                raise _refuse(root, parts_of(rel), "is a symbolic link or not a regular file") from err
            raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refuse(root, parts_of(rel), "is not a regular file")
    os.set_blocking(fd, True)
    return fd


def remove(root: Path, rel: str | Path) -> None:
    """Remove ROOT/rel whatever it is (a link is removed, never followed); absent is fine."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as fd:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(name, dir_fd=fd)  # fd-based on Linux: links inside are removed, not followed
            else:
                os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return


def rename(root: Path, parent: str | Path | None, src: str, dst: str) -> None:
    """Rename one entry of ROOT/parent to another name in the same folder, then fsync the folder."""
    with folder(root, parent) as fd:
        os.rename(src, dst, src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)


def sha256_fd(fd: int, *, upto: int | None = None) -> "hashlib._Hash":
    """The running sha256 of the first `upto` bytes (all when None) of an open file, read from offset 0."""
    h = hashlib.sha256()
    offset, left = 0, upto
    while left is None or left > 0:
        data = os.pread(fd, CHUNK if left is None else min(CHUNK, left), offset)
        if not data:
            break
        h.update(data)
        offset += len(data)
        if left is not None:
            left -= len(data)
    return h


def file_matches(root: Path, rel: str | Path, size: int, sha256: str) -> bool:
    """ROOT/rel is a regular file (reached without links) of `size` bytes whose sha256 is `sha256`."""
    try:
        fd = open_file(root, rel)
    except (OSError, UnsafePath):
        return False
    try:
        return os.fstat(fd).st_size == size and sha256_fd(fd).hexdigest() == sha256
    finally:
        os.close(fd)


def read_small(root: Path, rel: str | Path, limit: int = 1 << 20) -> bytes | None:
    """The bytes of a small regular file (None when absent, a link, not regular or larger than `limit`)."""
    try:
        fd = open_file(root, rel)
    except (OSError, UnsafePath):
        return None
    try:
        if os.fstat(fd).st_size > limit:
            return None
        return os.pread(fd, limit + 1, 0)
    finally:
        os.close(fd)
