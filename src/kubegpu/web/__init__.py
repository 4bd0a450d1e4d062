"""Faces for the browser: the self-contained HTML report (and, later, the dashboard)."""
