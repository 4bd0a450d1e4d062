"""The node agent (`kubegpu models agent`, one pod per GPU node): pull, verify, report, untaint.

Each turn, for every ModelCache whose nodeSelector picks this node: if the node already holds
spec.version verified, report Verified; else take a pull slot (at most fanOut.maxNodesPulling
nodes Downloading at once: the slot is claimed by a status patch carrying the resourceVersion
it was counted from, so two agents never both take the last slot), pull (see `pull`), and
report Verified or Error with bytes done. Old versions are removed only when no pod on this
node uses them. Once every cache picking this node is verified here, the agent removes the
`kubegpu.io/model-not-ready:NoSchedule` taint the controller put on it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from kubegpu.errors import InputError
from kubegpu.modelcache import rollout, store
from kubegpu.modelcache.kube import Conflict, KubeEdge
from kubegpu.modelcache.loop import run_turns
from kubegpu.modelcache.pull import PullFailed, pull
from kubegpu.modelcache.spec import HOLDS_ANNOTATION_PREFIX, NOT_READY_TAINT, ModelCache, decode_cache
from kubegpu.model.timeutil import parse_time

STALE_DOWNLOAD_SECONDS = 300.0  # a Downloading entry not refreshed for this long no longer holds a slot
REPORT_EVERY_SECONDS = 5.0
MAX_CLOCK_SKEW_SECONDS = 60.0  # a heartbeat dated further ahead than this is not trusted to hold a slot


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def heartbeat_age(entry: dict, now: datetime) -> float | None:
    """Seconds since a node's last status report; None when unreadable.

    Another node's clock may run ahead of ours: a report dated in the future counts as just
    made (age 0) only within MAX_CLOCK_SKEW_SECONDS; further ahead it is a broken clock (or a
    forged date) and counts as never refreshed, so it cannot hold a pull slot for ever."""
    seen = parse_time(entry.get("updatedAt"))
    if seen is None:
        return None
    age = (now - seen).total_seconds()
    if age < -MAX_CLOCK_SKEW_SECONDS:
        return None
    return max(0.0, age)


def slots_taken(cache: ModelCache, status_nodes: dict, me: str, now: datetime,
                log: Callable[[str], None] | None = None) -> int:
    """Nodes other than `me` downloading spec.version with a fresh heartbeat."""
    taken = 0
    for name, entry in status_nodes.items():
        if name == me or entry.get("state") != "Downloading" or entry.get("version") != cache.spec.version:
            continue
        age = heartbeat_age(entry, now)
        if age is None and log and parse_time(entry.get("updatedAt")) is not None:
            log(f"{cache.ref}: node {name}'s Downloading report is dated {entry.get('updatedAt')}, more than "
                f"{MAX_CLOCK_SKEW_SECONDS:g} s ahead of this node's clock: clock skew, not counted as a pull slot")
        if age is not None and age < STALE_DOWNLOAD_SECONDS:
            taken += 1
    return taken


@dataclass
class Agent:
    edge: KubeEdge
    node: str
    root: str | None = None                 # where spec.root is mounted in this container
    free_space: store.FreeSpace = store.free_bytes
    sleep: Callable[[float], None] = time.sleep
    log: Callable[[str], None] = print
    outcomes: dict[str, str] = field(default_factory=dict)   # model -> state after the last turn
    hashed: dict[str, tuple] = field(default_factory=dict)    # model -> identity of the folder this process hashed

    def root_of(self, cache: ModelCache) -> Path:
        return Path(self.root or cache.spec.root)

    def _entry(self, cache: ModelCache, state: str, **extra) -> dict:
        root = self.root_of(cache)
        entry = {"state": state, "version": cache.spec.version, "current": store.current_version(root, cache.name),
                 "bytesTotal": cache.total_bytes, "updatedAt": now_rfc3339(), **extra}
        try:
            entry["freeBytes"] = int(self.free_space(root if root.exists() else root.parent))
        except OSError:
            pass
        return entry

    def report(self, cache: ModelCache, entry: dict, resource_version: str | None = None) -> None:
        self.edge.patch_cache_status(cache.name, {"nodes": {self.node: entry}}, resource_version)

    def turn(self) -> dict[str, str]:
        """One pass over every ModelCache; returns model -> state on this node."""
        node = self.edge.get_node(self.node)
        self.outcomes = {}
        for body in self.edge.list_caches():
            name = (body.get("metadata") or {}).get("name", "?")
            try:
                cache = decode_cache(body, where="cluster")
            except InputError as err:
                self.log(f"skip ModelCache/{name}: {err}")
                continue
            if self.node not in rollout.targets(cache, [node]):
                continue
            try:
                self.outcomes[cache.name] = self._serve(cache, body)
            except Conflict as err:
                self.log(f"{cache.ref}: {err}; next turn")
                self.outcomes[cache.name] = "Pending"
        self._untaint_if_ready()
        return self.outcomes

    def _serve(self, cache: ModelCache, body: dict) -> str:
        root = self.root_of(cache)
        status_nodes = cache.status.get("nodes") or {}  # checked by decode_cache
        mine = status_nodes.get(self.node) or {}
        if store.current_version(root, cache.name) == cache.spec.version and self._verified(cache, root):
            if mine.get("state") != "Verified" or mine.get("current") != cache.spec.version:
                self.report(cache, self._entry(cache, "Verified", bytesDone=cache.total_bytes, error=None))
                self._annotate(cache)
            self._collect(cache, root)
            return "Verified"
        now = datetime.now(timezone.utc)
        if slots_taken(cache, status_nodes, self.node, now, self.log) >= cache.spec.fan_out.max_nodes_pulling:
            if mine.get("state") != "Pending" or mine.get("version") != cache.spec.version:
                self.report(cache, self._entry(cache, "Pending", bytesDone=0))
            return "Pending"
        rv = (body.get("metadata") or {}).get("resourceVersion")
        self.report(cache, self._entry(cache, "Downloading", bytesDone=0, error=None), rv)  # claims a slot
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.monotonic() - last[0] >= REPORT_EVERY_SECONDS:
                last[0] = time.monotonic()
                self.report(cache, self._entry(cache, "Downloading", bytesDone=done))

        try:
            in_use = self.edge.versions_in_use(cache, self.node)
            result = pull(cache, root, in_use=in_use, free_space=self.free_space, sleep=self.sleep, progress=progress)
        except (PullFailed, InputError) as err:
            self.log(f"{cache.ref} on {self.node}: {err}")
            self.report(cache, self._entry(cache, "Error", error=str(err)))
            return "Error"
        self.log(f"{cache.ref} on {self.node}: {result.version} verified"
                 + (f", removed {', '.join(result.removed)}" if result.removed else ""))
        self.report(cache, self._entry(cache, "Verified", bytesDone=cache.total_bytes, error=None))
        self._annotate(cache)
        return "Verified"

    def _verified(self, cache: ModelCache, root: Path) -> bool:
        """Every byte hashed to the manifest: on this process's first look at the version folder, and
        again whenever the folder or its marker is replaced (not on every turn: a model is many GB)."""
        folder = cache.version_dir(root)
        try:
            st, marker = os.lstat(folder), os.lstat(folder / store.MARKER)
        except OSError:
            return False
        identity = (cache.spec.version, store.manifest_text(cache), st.st_ino, st.st_ctime_ns, marker.st_ino,
                    marker.st_ctime_ns)
        if self.hashed.get(cache.name) == identity:
            return True
        if not store.is_verified(folder, cache):
            return False
        self.hashed[cache.name] = identity
        return True

    def _collect(self, cache: ModelCache, root: Path) -> None:
        """Remove old versions once the last pod of this node that used them is gone."""
        in_use = self.edge.versions_in_use(cache, self.node)
        if "current" in in_use:  # a pod mounted the pointer: which version it resolved to is unknown
            return
        removed = store.collect_garbage(root, cache.name, {cache.spec.version} | in_use)
        if removed:
            self.log(f"{cache.ref} on {self.node}: removed {', '.join(removed)} (no pod uses them)")

    def _annotate(self, cache: ModelCache) -> None:
        self.edge.patch_node(self.node, {"metadata": {"annotations": {
            HOLDS_ANNOTATION_PREFIX + cache.name: cache.spec.version}}})

    def _untaint_if_ready(self) -> None:
        if any(state != "Verified" for state in self.outcomes.values()):
            return
        node = self.edge.get_node(self.node)  # fresh: our own annotation patch changed its resourceVersion
        if not rollout.has_not_ready_taint(node):
            return
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != NOT_READY_TAINT]
        try:
            self.edge.patch_node(self.node, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                             "spec": {"taints": taints or None}})
            self.log(f"node {self.node}: removed taint {NOT_READY_TAINT}")
        except Conflict:
            pass  # the node changed; next turn


def run(agent: Agent, *, once: bool, interval: float) -> int:
    """Turns until stopped (or one with `once`); exit status 0 when every cache is Verified here.

    In loop mode an unreachable API is retried with back-off (see `loop`), never an exit."""
    def turn() -> int:
        outcomes = agent.turn()
        return 0 if all(s == "Verified" for s in outcomes.values()) else 1

    return run_turns(turn, once=once, interval=interval, sleep=agent.sleep, log=agent.log,
                     what=f"agent on {agent.node}")
