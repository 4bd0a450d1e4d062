"""Money: what GPUs cost, where the price came from, and what waste or a fix is worth.

One price model for every command (`--prices FILE`, the demo's article figure, or built-in list
prices), and small pure functions that turn GPU-hours into money objects
`{"amount", "currency", "per", "source"}`. Without any price, callers show GPU-hours only.
"""
