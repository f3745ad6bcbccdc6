"""The CLI's progress lines keep their columns whatever the step names' lengths."""

from __future__ import annotations

from sagagraph.cli.output import format_event, started_line, trail_lines
from sagagraph.saga.view import make_event


def action_column(line: str) -> int:
    """Where the action (``execute``, ``compensate``) starts on a progress line."""
    return min(line.index(word) for word in ("execute", "compensate") if word in line)


def test_a_long_step_name_keeps_the_actions_in_one_column() -> None:
    events = [
        make_event("validator", "execute", "ok", 1, "fine"),
        make_event("reproducibility_check", "execute", "error", 1, "RuntimeError: no"),
        make_event("validator", "compensate", "ok", 1, ""),
    ]
    lines = list(trail_lines(events))
    assert len({action_column(line) for line in lines}) == 1, "\n".join(lines)


def test_short_names_keep_the_usual_layout() -> None:
    assert started_line("validator", "execute", 1) == "  > validator    execute started"
    assert format_event(make_event("reviewer", "execute", "ok", 1, "")).startswith(
        "  + reviewer     execute ok"
    )
