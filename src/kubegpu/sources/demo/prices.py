"""The demo cluster's price: the article's figure for an 8x A100 node (30-50 yuan an hour; 40 taken).

A prices file in the `--prices` format, so the demo is priced exactly as a user's cluster is.
"""

DEMO_PRICES_YAML = """\
currency: CNY
prices:
  - instanceType: p4de.24xlarge
    perHour: 40
    source: "article: an 8x A100 node costs 30-50 CNY/h (40 taken)"
"""
