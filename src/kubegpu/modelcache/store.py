"""One node's copies of one model on disk, laid out so that a kill at any moment is harmless.

    ROOT/<model>/<version>/<path>               a verified version (renamed into place whole)
    ROOT/<model>/<version>/.kubegpu-manifest.json  the manifest it was verified against
    ROOT/<model>/.<version>.staging/<path>      a file verified, waiting for the rest
    ROOT/<model>/.<version>.staging/<path>.partial  bytes being downloaded (resumed from their length)
    ROOT/<model>/current -> <version>           the verified version pods should use

A version folder appears only by one rename of its complete, fsynced staging folder; `current`
changes only by renaming a new symlink over it. Old versions are first renamed to
`.<version>.deleting` and then removed, so a half-deleted folder never looks like a version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

from kubegpu.modelcache import safefs
from kubegpu.modelcache.spec import ModelCache

MARKER = ".kubegpu-manifest.json"
CURRENT = "current"
PARTIAL = ".partial"


def model_dir(root: str | Path, model: str) -> Path:
    return Path(root) / model


def staging_dir(root: str | Path, model: str, version: str) -> Path:
    return model_dir(root, model) / f".{version}.staging"


def manifest_text(cache: ModelCache) -> str:
    """The manifest a version folder was verified against (compared byte for byte on restart)."""
    files = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in cache.spec.files]
    return json.dumps({"model": cache.name, "version": cache.spec.version, "files": files}, indent=1,
                      sort_keys=True) + "\n"


def verify(folder: Path, cache: ModelCache) -> str:
    """'verified' when the folder holds this exact manifest's marker and every file's bytes hash to its
    digest (each a regular file reached without links: every byte is read); 'damaged' when the marker
    matches but some file does not; 'other' when there is no such marker (absent, another manifest)."""
    root, rel = folder.parent.parent, f"{folder.parent.name}/{folder.name}"
    marker = safefs.read_small(root, f"{rel}/{MARKER}")
    if marker is None or marker != manifest_text(cache).encode():
        return "other"
    ok = all(safefs.file_matches(root, f"{rel}/{f.path}", f.size, f.sha256) for f in cache.spec.files)
    return "verified" if ok else "damaged"


def is_verified(folder: Path, cache: ModelCache) -> bool:
    """Every byte of every file of this exact manifest is in the folder and matches (see `verify`)."""
    return verify(folder, cache) == "verified"


def current_version(root: str | Path, model: str) -> str | None:
    try:
        with safefs.folder(Path(root), model) as fd:
            target = os.readlink(CURRENT, dir_fd=fd)
    except (OSError, safefs.UnsafePath):
        return None
    return os.path.basename(target.rstrip("/")) or None


def versions_on_disk(root: str | Path, model: str) -> list[str]:
    """Version folders (complete ones: staging and deleting folders are hidden)."""
    folder = model_dir(root, model)
    if safefs.kind(Path(root), model) != "dir":
        return []
    return sorted(p.name for p in folder.iterdir()
                  if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_of(path: Path, *, upto: int | None = None) -> "hashlib._Hash":
    """The running sha256 of a file's first `upto` bytes (all when None)."""
    h = hashlib.sha256()
    left = upto
    with open(path, "rb") as fh:
        while left is None or left > 0:
            data = fh.read(1 << 20 if left is None else min(1 << 20, left))
            if not data:
                break
            h.update(data)
            if left is not None:
                left -= len(data)
    return h


def finalize(cache: ModelCache, staging: Path, final: Path) -> None:
    """Write the manifest marker, fsync everything, rename the staging folder into place."""
    root, model = final.parent.parent, final.parent.name
    marker = f"{model}/{staging.name}/{MARKER}"
    safefs.remove(root, marker)
    fd = safefs.open_file(root, marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, manifest_text(cache).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    for dirpath, _, _ in os.walk(staging):  # os.walk does not descend into links
        fsync_dir(Path(dirpath))
    if safefs.kind(root, f"{model}/{final.name}") is not None:  # an unverified leftover (never one we made)
        discard(final)
    safefs.rename(root, model, staging.name, final.name)


def switch_current(root: str | Path, model: str, version: str) -> None:
    """Point ROOT/<model>/current at `version` with one atomic rename of a fresh symlink."""
    folder = model_dir(root, model)
    tmp = folder / f".{CURRENT}.{os.getpid()}.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(version, tmp)
    os.replace(tmp, folder / CURRENT)
    fsync_dir(folder)


def discard(folder: Path) -> None:
    """Remove a folder so that no interrupted removal ever leaves something that looks valid."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()  # a link is removed, never followed
        return
    if not folder.exists():
        return
    doomed = folder.parent / f".{folder.name.lstrip('.')}.deleting"
    if doomed.exists():
        shutil.rmtree(doomed, ignore_errors=True)
    os.rename(folder, doomed)
    fsync_dir(folder.parent)
    shutil.rmtree(doomed, ignore_errors=True)


def used_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def free_bytes(path: str | Path) -> int:
    """Bytes an unprivileged writer may still use on the file system of `path` (statvfs)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


FreeSpace = Callable[[Path], int]


def collect_garbage(root: str | Path, model: str, keep: set[str]) -> list[str]:
    """Remove every version folder not in `keep` (never `current`'s), and leftovers of old staging/deleting.

    Returns the names removed.
    """
    folder = model_dir(root, model)
    if safefs.kind(Path(root), model) != "dir":  # never iterate (and delete) through a planted link
        return []
    keep = set(keep)
    cur = current_version(root, model)
    if cur:
        keep.add(cur)
    removed = []
    for p in sorted(folder.iterdir()):
        if p.name == CURRENT or p.is_symlink():
            continue
        if p.name.endswith(".deleting"):
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.endswith(".staging") and p.name[1:-len(".staging")] not in keep:
            discard(p)
            removed.append(p.name)
        elif not p.name.startswith(".") and p.is_dir() and p.name not in keep:
            discard(p)
            removed.append(p.name)
    return removed
