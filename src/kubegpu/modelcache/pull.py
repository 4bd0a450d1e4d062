"""One node's pull of one ModelCache version: resume, verify every byte, switch only when all verify.

Order of work: (1) if ROOT/<model>/<version> already verified, only make `current` point at it;
(2) remove versions nobody needs (never `current`); (3) the disk-space guard: the rest of the
version must fit with the headroom kept and under the storage limit, else refuse and remove
this version's staging folder; (4) each file: append to `<path>.partial` from its length (HTTP
Range), hash, fsync, rename to `<path>` only when its sha256 matches; (5) rename the staging
folder into place, swap `current`; (6) garbage-collect versions no pod uses (offline: keep the
one `current` pointed at before). Transient failures retry with exponential back-off up to a cap.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kubegpu.errors import InputError
from kubegpu.modelcache import safefs, store
from kubegpu.modelcache.fetch import PermanentError, Throttle, TransientError, open_file
from kubegpu.modelcache.spec import ModelCache

# A file whose bytes fail the digest is fetched again from zero this many times before the
# manifest (or the source) is declared wrong: one bad transfer is a glitch, repeated ones are not.
FRESH_FETCHES_ON_MISMATCH = 2
Progress = Callable[[int, int], None]  # (bytes done, bytes total)


class PullFailed(Exception):
    """The version could not be verified on this node (the previous one is untouched)."""


class DiskSpaceRefused(PullFailed):
    """Pulling would break the configured headroom or storage limit; nothing was started."""


@dataclass
class PullResult:
    model: str
    version: str
    root: str
    bytes_total: int
    bytes_fetched: int
    previous: str | None
    switched: bool
    removed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"model": self.model, "version": self.version, "state": "Verified", "root": self.root,
                "bytesTotal": self.bytes_total, "bytesFetched": self.bytes_fetched, "previous": self.previous,
                "switched": self.switched, "removed": self.removed}


@dataclass
class Puller:
    """The knobs of a pull; the seams (free space, sleep, clock) are for tests and the agent."""

    cache: ModelCache
    root: Path
    in_use: set[str] | None = None        # versions pods on this node use; None = unknown (offline)
    free_space: store.FreeSpace = store.free_bytes
    sleep: Callable[[float], None] = time.sleep
    progress: Progress | None = None
    rate: float | None = None             # bytes/s; default: the cache's per-node share
    timeout: float = 30.0
    fetched: int = 0
    _staging: str = ""                   # ROOT-relative staging folder of this run
    _before: list[int] = field(default_factory=list)  # bytes of the files before each one, for progress

    def run(self) -> PullResult:
        try:
            return self._run()
        except safefs.UnsafePath as err:
            raise PullFailed(f"{self.cache.ref}: {err}") from None
        except OSError as err:  # the disk under the root (full, read-only, gone): this node cannot pull
            raise PullFailed(f"{self.cache.ref}: {err.filename or self.root}: {err.strerror or err}") from None

    def _run(self) -> PullResult:
        cache, root = self.cache, self.root
        version = cache.spec.version
        final = cache.version_dir(root)
        previous = store.current_version(root, cache.name)
        state = store.verify(final, cache)  # reads every byte: "verified" is a digest that matched
        if state == "verified":
            return self._switch(previous, switched=previous != version)
        if state == "other" and safefs.kind(root, f"{cache.name}/{version}") is not None and \
                (previous == version or version in (self.in_use or set())):
            raise InputError(f"{final} is in use and was verified against a different manifest: give changed "
                             "files a new version name", obj=cache.ref, field="spec.version")
        root.mkdir(parents=True, exist_ok=True)
        with safefs.folder(root, cache.name, create=True):  # refuses a planted link as the model folder
            pass
        store.collect_garbage(root, cache.name, self._keep(version, previous))
        staging = store.staging_dir(root, cache.name, version)
        self._staging = f"{cache.name}/{staging.name}"
        if safefs.kind(root, self._staging) not in (None, "dir"):
            safefs.remove(root, self._staging)  # a planted link or file: ours to remove, never to follow
        self._guard(staging)
        with safefs.folder(root, self._staging, create=True):
            pass
        throttle = Throttle(self.rate if self.rate is not None else cache.node_rate(), sleep=self.sleep)
        done = sum(self._staged_bytes(i) for i in range(len(cache.spec.files)))
        self._report(done)
        for index in range(len(cache.spec.files)):
            self._fetch_verified(index, throttle)
        store.finalize(cache, staging, final)
        return self._switch(previous, switched=True)

    # -- policy -----------------------------------------------------------------------------------
    def _keep(self, version: str, previous: str | None) -> set[str]:
        keep = {version}
        if previous:
            keep.add(previous)
        if self.in_use is not None:
            keep |= self.in_use
        return keep

    def _switch(self, previous: str | None, *, switched: bool) -> PullResult:
        cache, version = self.cache, self.cache.spec.version
        if store.current_version(self.root, cache.name) != version:
            store.switch_current(self.root, cache.name, version)
        # with pods known, only what they use survives; offline (or a pod mounted `current`, which
        # resolved to whichever version it was), the version we replaced stays too
        keep = {version} | (self.in_use or set())
        if previous and (self.in_use is None or "current" in self.in_use):
            keep.add(previous)
        removed = store.collect_garbage(self.root, cache.name, keep)
        self._report(cache.total_bytes)
        return PullResult(cache.name, version, str(self.root), cache.total_bytes, self.fetched, previous,
                          switched, removed)

    def _guard(self, staging: Path) -> None:
        """Refuse (and remove this version's staging folder) when the rest would not fit."""
        cache = self.cache
        have = sum(self._staged_bytes(i) for i in range(len(cache.spec.files))) if staging.is_dir() else 0
        needed = max(0, cache.total_bytes - have)
        free = self.free_space(self.root)
        headroom = cache.headroom_bytes() or 0
        limit = cache.limit_bytes()
        reason = None
        if free - needed < headroom:
            reason = (f"needs {needed} more bytes but {free} are free on {self.root} and the headroom is "
                      f"{headroom} (spec.storage.headroom)")
        elif limit is not None:
            used = store.used_bytes(store.model_dir(self.root, cache.name)) - (store.used_bytes(staging)
                                                                                if staging.is_dir() else 0)
            if used + cache.total_bytes > limit:
                reason = (f"{used} bytes already used under {store.model_dir(self.root, cache.name)} plus "
                          f"{cache.total_bytes} for {cache.spec.version} exceed the storage limit {limit} "
                          "(spec.storage.limit)")
        if reason:
            if staging.is_dir():
                store.discard(staging)
            raise DiskSpaceRefused(f"{cache.ref}: not pulling {cache.spec.version}: {reason}")

    # -- one file -----------------------------------------------------------------------------------
    def _staged_bytes(self, index: int) -> int:
        """Bytes already staged for a file (an estimate for the disk guard and progress: hashed later)."""
        f = self.cache.spec.files[index]
        target = f"{self._staging}/{f.path}"
        if safefs.size_of(self.root, target) is not None:
            return f.size
        return min(f.size, safefs.size_of(self.root, target + store.PARTIAL) or 0)

    def _report(self, done: int) -> None:
        if self.progress:
            self.progress(done, self.cache.total_bytes)

    def _fetch_verified(self, index: int, throttle: Throttle) -> None:
        f = self.cache.spec.files[index]
        root, target = self.root, f"{self._staging}/{f.path}"
        safefs.clear_way(root, target)
        if safefs.file_matches(root, target, f.size, f.sha256):  # a staged file counts only if its bytes do
            return
        safefs.remove(root, target)
        partial = target + store.PARTIAL
        if safefs.kind(root, partial) not in (None, "file"):
            safefs.remove(root, partial)
        parent, name = safefs.split(target)
        mismatches = failures = 0
        retry = self.cache.spec.retry
        while True:
            before = self.fetched
            try:
                digest = self._download(index, partial, throttle)
            except TransientError as err:
                failures = 1 if self.fetched > before else failures + 1  # progress earns a fresh budget
                if failures >= retry.attempts:
                    raise PullFailed(f"{self.cache.ref}: {f.path}: gave up after {failures} attempts: {err}") from None
                self.sleep(min(retry.max_backoff_seconds, retry.backoff_seconds * 2 ** min(failures - 1, 60)))
                continue
            except PermanentError as err:
                raise PullFailed(f"{self.cache.ref}: {f.path}: {err}") from None
            if digest == f.sha256:
                safefs.rename(root, parent, name + store.PARTIAL, name)
                return
            safefs.remove(root, partial)
            mismatches += 1
            if mismatches > FRESH_FETCHES_ON_MISMATCH:
                raise InputError(f"{f.path!r} from the source hashes to {digest} after {mismatches} downloads, "
                                 f"the manifest says {f.sha256}", obj=self.cache.ref,
                                 field=f"spec.files[{index}].sha256")

    def _download(self, index: int, partial: str, throttle: Throttle) -> str:
        """Append the missing bytes to `partial` (a regular file opened without following links);
        the sha256 of every byte of the whole file when complete."""
        f = self.cache.spec.files[index]
        fd = safefs.open_file(self.root, partial, os.O_RDWR | os.O_CREAT, create_parents=True)
        try:
            have = os.fstat(fd).st_size
            body = open_file(self.cache, index, have if have <= f.size else 0, timeout=self.timeout)
            try:
                start = body.start
                h = safefs.sha256_fd(fd, upto=start) if start else hashlib.sha256()
                os.ftruncate(fd, start)
                written = start
                for chunk in body.chunks:
                    if written + len(chunk) > f.size:
                        raise InputError(f"the source sends more than the manifest's {f.size} bytes for {f.path!r}",
                                         obj=self.cache.ref, field=f"spec.files[{index}].size")
                    view = memoryview(chunk)
                    while view:
                        n = os.pwrite(fd, view, written)
                        view, written = view[n:], written + n
                    h.update(chunk)
                    self.fetched += len(chunk)
                    throttle.consume(len(chunk))
                    self._report_file(index, written)
                os.fsync(fd)
            finally:
                body.close()
        finally:
            os.close(fd)
        if written < f.size:
            raise TransientError(f"{f.path}: connection ended at byte {written} of {f.size}")
        return h.hexdigest()

    def _report_file(self, index: int, written: int) -> None:
        if self.progress:
            if len(self._before) != len(self.cache.spec.files) + 1:  # once: a manifest may list 30,000 files
                self._before = [0, *itertools.accumulate(f.size for f in self.cache.spec.files)]
            self.progress(self._before[index] + written, self._before[-1])


def pull(cache: ModelCache, root: str | Path, **kwargs) -> PullResult:
    """Make `root` hold cache.spec.version verified and `current` point at it (see module doc)."""
    return Puller(cache, Path(root), **kwargs).run()
