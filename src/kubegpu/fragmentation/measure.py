"""The FGD fragmentation measure F_n(M) (paper §3), as the fragmentation reports use it.

The measure itself lives in `kubegpu.placement.measure`, where the placement
policies that score with it can import it without importing this package (no import cycle).
"""

from kubegpu.placement.measure import (
    Fragmentation,
    cluster_fragmentation,
    fragment_matrix,
    node_fragmentation,
    state_fragmentation,
)

__all__ = ["Fragmentation", "cluster_fragmentation", "fragment_matrix", "node_fragmentation",
           "state_fragmentation"]
