"""The money object every JSON answer carries: an amount, its currency, its period and its source."""

from __future__ import annotations

import msgspec

HOURS_PER_DAY = 24


class Money(msgspec.Struct, frozen=True):
    """`{"amount", "currency", "per", "source"}`: per is "hour", "day" or "once"; source says where
    the price came from (a prices file, a list price with its date, the article for the demo)."""

    amount: float
    currency: str
    per: str
    source: str


def money(amount: float, currency: str, per: str, source: str) -> Money:
    """A Money rounded to cents (4 decimals below 1, so small hourly figures stay visible)."""
    digits = 2 if abs(amount) >= 1 else 4
    return Money(amount=round(float(amount), digits), currency=currency, per=per, source=source)


def money_text(m: Money | None, *, unpriced: str = "no price") -> str:
    """`1,234.50 CNY/day` (the source is printed once per report, not on every figure)."""
    if m is None:
        return unpriced
    amount = f"{m.amount:,.2f}" if abs(m.amount) >= 1 else f"{m.amount:.4g}"
    per = "" if m.per == "once" else f"/{m.per}"
    return f"{amount} {m.currency}{per}"
