"""Placement policies, one module per family; `kubegpu.placement.registry` lists them."""
