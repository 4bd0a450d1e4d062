"""The extender's list/watch: the dashboard's LiveCache, with each pod event also sent to the overlay.

The live cache marks the data dirty and the refresher rebuilds a generation after a debounce
(seconds at 5,000 nodes). A pod bound by another scheduler would be invisible to the scores for
that long, so every pod event is also handed to `ExtenderStore.observe_pod` as it arrives: a
bind counts on its node at once, a pod that ends gives back what the overlay held for it. The
rebuild still runs and remains the source of truth.
"""

from __future__ import annotations

import msgspec

from kubegpu.extender.podfacts import decode_pod
from kubegpu.extender.state import ExtenderStore
from kubegpu.errors import InputError
from kubegpu.web.watch import LiveCache


class _PodEvent(msgspec.Struct):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


_EVENT = msgspec.json.Decoder(_PodEvent)


def observe_pod_event(store: ExtenderStore, line: bytes) -> bool:
    """One watch line of the pods kind applied to the store's overlay (False when it changed nothing
    or cannot be read: the rebuild that follows every event reads it, and reports what is wrong)."""
    try:
        event = _EVENT.decode(line)
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            return False
        pod = decode_pod(event.object)
    except (msgspec.ValidationError, msgspec.DecodeError, InputError):
        return False
    return store.observe_pod(pod, gone=event.type == "DELETED")


class ExtenderLiveCache(LiveCache):
    """LiveCache that applies pod events to `store`'s overlay as they arrive."""

    def __init__(self, *args, store: ExtenderStore, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.store = store

    def _apply(self, kind, line: bytes) -> int:
        applied = super()._apply(kind, line)
        if applied and kind.plural == "pods":
            observe_pod_event(self.store, line)
        return applied
