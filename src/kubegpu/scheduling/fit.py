"""The resource half of "does this pod fit on this node", in one vectorised form.

upstream NodeResourcesFit fitsRequest: for every resource the pod requests (a zero request is
never checked), `request > allocatable - requested` is insufficient; a resource no node offers
is insufficient everywhere; the pod also needs a free pod slot. The filter plugin words the
reasons from `short_columns`; the defrag planner's what-if states ask `fits_requests` of their
own free arrays (the same scheduler units), so both apply one rule.

The device half: a pod asking k GPUs of `gpu_milli` each needs k devices on one node with that
much room each (a whole GPU is 1000 milli, so "entirely free"). The placement state, the
fragmentation capacity numbers and the audit all count devices with `devices_with_room`; the
defrag work state and its MILP replay ask `device_room` (whole free devices, or one device with
room for a share) of their own what-if device arrays.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.gpu import MILLI


def short_columns(free: np.ndarray, request: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(requested column indices, bool[n, k] where that column is short on that node)."""
    cols = np.flatnonzero(request)
    return cols, free[:, cols] < request[cols]


def fits_requests(free: np.ndarray, request: np.ndarray, pods_free: np.ndarray | None = None) -> np.ndarray:
    """bool[n]: nodes whose free room covers every requested column (and a pod slot when given)."""
    _, short = short_columns(free, request)
    ok = ~short.any(axis=1)
    if pods_free is not None:
        ok &= pods_free >= 1
    return ok


def fits_amounts(free: tuple[np.ndarray, ...], request: tuple[int, ...]) -> np.ndarray:
    """bool[n]: `fits_requests` for scalar columns kept as separate arrays (a zero request is never checked)."""
    n = len(free[0]) if free else 0
    ok = np.ones(n, dtype=bool)
    for column, amount in zip(free, request):
        if amount:
            ok &= column >= amount
    return ok


def devices_with_room(dev_free: np.ndarray, gpu_milli: int) -> np.ndarray:
    """int[n]: devices per node with at least `gpu_milli` free (padding devices have 0 and never count)."""
    if gpu_milli <= 0:
        return np.zeros(dev_free.shape[0], dtype=np.int64)
    return (dev_free >= gpu_milli).sum(axis=1, dtype=np.int64)


def fits_devices(dev_free: np.ndarray, num_gpu: int, gpu_milli: int) -> np.ndarray:
    """bool[n]: nodes with `num_gpu` distinct devices of `gpu_milli` free each."""
    if num_gpu <= 0:
        return np.ones(dev_free.shape[0], dtype=bool)
    return devices_with_room(dev_free, gpu_milli) >= num_gpu


def copies_that_fit(dev_free: np.ndarray, num_gpu: int, gpu_milli: int,
                    free: tuple[np.ndarray, ...] = (), request: tuple[int, ...] = ()) -> np.ndarray:
    """int[n]: how many such pods each node could take at once (devices, then each requested column)."""
    count = devices_with_room(dev_free, gpu_milli) // max(num_gpu, 1)
    for column, amount in zip(free, request):
        if amount:
            count = np.minimum(count, np.maximum(column, 0) // amount)
    return count


def whole_free_devices(dev_free: np.ndarray, dev_total: np.ndarray) -> np.ndarray:
    """int[n]: devices that are one whole GPU and entirely free (a time-sliced or padding slot never counts)."""
    return ((dev_free == MILLI) & (dev_total == MILLI)).sum(axis=1, dtype=np.int64)


def device_room(dev_free: np.ndarray, dev_total: np.ndarray, *, whole: int = 0, milli: int = 0) -> np.ndarray:
    """bool[n]: nodes with `whole` entirely free whole GPUs, or (whole == 0) one device with `milli` free.

    A pod holding whole devices needs as many entirely free ones elsewhere; a pod holding a
    share of one device needs one device with at least that share free; neither: always room.
    """
    if whole > 0:
        return whole_free_devices(dev_free, dev_total) >= whole
    return fits_devices(dev_free, 1, milli) if milli > 0 else np.ones(dev_free.shape[0], dtype=bool)
