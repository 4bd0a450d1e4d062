"""Tables a person can read at any width: names and numbers are never cut.

As kubectl does, a table never truncates a cell: when the natural width exceeds the terminal,
optional columns are dropped (highest `drop` rank first; `-o wide` shows them all) and only columns
marked `wrap` (free text) may wrap, at spaces. Printed lines carry no trailing padding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

_TRAILING = re.compile(r"\s+((?:\x1b\[[0-9;]*m)*)$")  # padding before the closing colour codes
GAP = 2  # rich's padding (0, 1) between two columns with box=None and pad_edge=False


@dataclass(frozen=True)
class Col:
    header: str
    right: bool = False
    drop: int = 0      # 0: always shown; higher numbers are dropped first when the table is too wide
    wrap: bool = False  # free text that may wrap at spaces (never inside a word)


@lru_cache(maxsize=1 << 16)
def _width(cell: str, words: bool) -> int:
    """Printed width of a cell (markup removed): its longest line, or its longest word."""
    plain = Text.from_markup(cell).plain if "[" in cell else cell
    if not words:
        return max((len(line) for line in plain.splitlines()), default=0)
    return max((len(w) for w in plain.split()), default=0)


def min_width(col: Col, cells: Sequence[str]) -> int:
    """The narrowest a column may be: its longest cell, or its longest word when it wraps."""
    return max(_width(c, col.wrap) for c in [col.header, *cells])


def needed_width(cols: Sequence[Col], rows: Sequence[Sequence[str]], idx: Sequence[int]) -> int:
    """The narrowest table of columns `idx` that cuts no word."""
    return sum(min_width(cols[i], [r[i] for r in rows]) for i in idx) + GAP * (len(idx) - 1)


def fit_columns(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int | None) -> list[int]:
    """Indexes of the columns to show so that the table fits `width` (None: all)."""
    keep = list(range(len(cols)))
    if width is None:
        return keep

    def needed(idx: list[int]) -> int:
        return needed_width(cols, rows, idx)

    for rank in sorted({c.drop for c in cols if c.drop}, reverse=True):
        if needed(keep) <= width:
            break
        keep = [i for i in keep if cols[i].drop != rank]
    return keep


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[str]], keep: Sequence[int],
                  width: int | None) -> list[int] | None:
    """Widths that fit `width` without cutting a word (None: every column at its natural width).

    Every column gets at least its longest word; the rest of the width goes to wrapping columns in
    proportion to what they would need unwrapped. (rich's own squeezing may cut inside a word.)"""
    natural = [min_width(Col(cols[i].header), [r[i] for r in rows]) for i in keep]
    if width is None or sum(natural) + GAP * (len(keep) - 1) <= width:
        return None
    mins = [min_width(cols[i], [r[i] for r in rows]) for i in keep]
    spare = max(width - sum(mins) - GAP * (len(keep) - 1), 0)
    want = [n - m for n, m in zip(natural, mins)]
    total = sum(want) or 1
    widths = [m + spare * w // total for m, w in zip(mins, want)]
    widths[max(range(len(keep)), key=lambda j: want[j])] += width - sum(widths) - GAP * (len(keep) - 1) \
        if spare else 0
    return widths


def make_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], *, width: int | None) -> Table:
    """A rich Table of the columns that fit `width`; cells are rich markup strings."""
    keep = fit_columns(cols, rows, width)
    if width is not None:
        width = max(width, needed_width(cols, rows, keep))
    widths = column_widths(cols, rows, keep, width)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for j, i in enumerate(keep):
        c = cols[i]
        table.add_column(c.header, justify="right" if c.right else "left", no_wrap=not c.wrap,
                         overflow="fold", width=widths[j] if widths else None)
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return table


def table_width(con: Console, wide: bool) -> int | None:
    """The width a table may use: the terminal's, or unlimited with -o wide or in a pipe."""
    return None if wide or not con.is_terminal else con.width


def print_table(con: Console, table: Table, width: int | None = None) -> None:
    """Print a table within `width` (None: as wide as its cells) without trailing padding."""
    saved = con.width
    con.width = width or 100_000  # rich never renders wider than the console
    try:
        with con.capture() as cap:
            con.print(table)
    finally:
        con.width = saved
    lines = [_TRAILING.sub(r"\1", line) for line in cap.get().splitlines()]
    con.file.write("\n".join(lines) + "\n")
    con.file.flush()


def show_records(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> None:
    """One block per row (as `kubectl describe` does): the first cell as a heading, then
    'header: value' lines, indented; rich wraps them at spaces."""
    from rich.padding import Padding
    from rich.text import Text

    for r in rows:
        con.print(Text.from_markup(r[0], style="bold"))
        for c, cell in zip(cols[1:], r[1:]):
            con.print(Padding(Text.from_markup(f"{c.header.lower()}: ") + Text.from_markup(cell), (0, 0, 0, 2)))


def show(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], *, wide: bool,
         records_when_narrow: bool = False) -> None:
    """Fit, build and print a table in one call. With `records_when_narrow`, a table that cannot fit
    the terminal without overflowing prints as records instead."""
    width = table_width(con, wide)
    if records_when_narrow and width is not None and needed_width(cols, rows, fit_columns(cols, rows, width)) > width:
        show_records(con, cols, rows)
        return
    if width is not None:  # still too wide with every optional column gone: overflow, never cut a word
        width = max(width, needed_width(cols, rows, fit_columns(cols, rows, width)))
    print_table(con, make_table(cols, rows, width=width), width)
