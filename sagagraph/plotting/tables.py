"""Records (events, bus messages, saga views) as a table: HTML in a notebook, text when printed."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sagagraph.compare import aligned
from sagagraph.errors import ConfigurationError


@dataclass(frozen=True)
class Table:
    """Rows of text under named columns: HTML in a notebook, aligned text when printed."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __str__(self) -> str:
        return "\n".join(aligned([self.columns, *self.rows]))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        return str(self)


def _cell(value: Any, max_width: int) -> str:
    if value is None:
        text = ""
    elif isinstance(value, list | tuple):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def records_table(
    records: Iterable[Mapping[str, Any]], columns: Sequence[str], *, max_width: int = 60
) -> Table:
    """A :class:`Table` of ``columns`` from each record (events, bus messages, saga views).

    A missing field or None is an empty cell, a list is joined with commas, and a cell
    longer than ``max_width`` characters is cut with an ellipsis.
    """
    if not columns:
        raise ConfigurationError("records_table: name at least one column")
    rows = tuple(tuple(_cell(r.get(c), max_width) for c in columns) for r in records)
    return Table(tuple(columns), rows)
