"""Faces for the browser: the self-contained HTML report and the `serve` dashboard (pages, JSON API, /metrics)."""
