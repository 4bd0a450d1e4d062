"""Tables a person can read at any width: names and numbers are never cut.

As kubectl does, a table never truncates a cell: when the natural width exceeds the terminal,
optional columns are dropped (highest `drop` rank first; `-o wide` shows them all) and only columns
marked `wrap` (free text) may wrap, at spaces. Printed lines carry no trailing padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

GAP = 2  # rich's padding (0, 1) between two columns with box=None and pad_edge=False


@dataclass(frozen=True)
class Col:
    header: str
    right: bool = False
    drop: int = 0      # 0: always shown; higher numbers are dropped first when the table is too wide
    wrap: bool = False  # free text that may wrap at spaces (never inside a word)


def _width(cell: str, words: bool) -> int:
    text = Text.from_markup(cell)
    if not words:
        return max((len(line) for line in text.plain.splitlines()), default=0)
    return max((len(w) for w in text.plain.split()), default=0)


def fit_columns(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int | None) -> list[int]:
    """Indexes of the columns to show so that the table fits `width` (None: all)."""
    keep = list(range(len(cols)))
    if width is None:
        return keep

    def needed(idx: list[int]) -> int:
        total = 0
        for i in idx:
            cells = [cols[i].header, *(r[i] for r in rows)]
            total += max(_width(c, cols[i].wrap) for c in cells)
        return total + GAP * (len(idx) - 1)

    for rank in sorted({c.drop for c in cols if c.drop}, reverse=True):
        if needed(keep) <= width:
            break
        keep = [i for i in keep if cols[i].drop != rank]
    return keep


def make_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], *, width: int | None) -> Table:
    """A rich Table of the columns that fit `width`; cells are rich markup strings."""
    keep = fit_columns(cols, rows, width)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for i in keep:
        c = cols[i]
        table.add_column(c.header, justify="right" if c.right else "left", no_wrap=not c.wrap,
                         overflow="fold")
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
    lines = [line.rstrip() for line in cap.get().splitlines()]
    con.file.write("\n".join(lines) + "\n")
    con.file.flush()


def show(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], *, wide: bool) -> None:
    """Fit, build and print a table in one call."""
    width = table_width(con, wide)
    print_table(con, make_table(cols, rows, width=width), width)
