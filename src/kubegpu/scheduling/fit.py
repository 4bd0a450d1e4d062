"""The resource half of "does this pod fit on this node", in one vectorised form.

upstream NodeResourcesFit fitsRequest: for every resource the pod requests (a zero request is
never checked), `request > allocatable - requested` is insufficient; a resource no node offers
is insufficient everywhere; the pod also needs a free pod slot. The filter plugin words the
reasons from `short_columns`; the defrag planner's what-if states ask `fits_requests` of their
own free arrays (the same scheduler units), so both apply one rule.
"""

from __future__ import annotations

import numpy as np


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
