"""Placement policies, one module per family; `kubegpu.scheduling.placement.registry` lists them."""
