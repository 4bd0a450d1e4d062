"""Counted nouns in report text: '1 GPU', '2 GPUs', '1 replica' — never 'GPU(s)'."""

from __future__ import annotations


def counted(n: int | float, word: str, plural: str | None = None) -> str:
    """`n` and `word`, plural unless n == 1 ('1 pod', '0 pods', '2.5 GPUs')."""
    return f"{n:g} {word}" if n == 1 else f"{n:g} {plural or word + 's'}"
