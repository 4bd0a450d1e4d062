"""Where pods' volumes live and how fast a model loads from them: read by the audit, `models` and money."""
