"""Progress on stderr for the long phases: loading a PDF page by page, each step as it starts.

A step's start and end come from the saga's hooks (``output.progress_printer``). A
choreographed run's lines are read back from its events once it ends (``output.trail_lines``),
in the order they were recorded.
Everything goes to stderr, so the JSON on stdout stays clean under ``--json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

STARTED = ("execute", "compensate")
"""The actions whose start has a progress line of its own."""


def say(text: str) -> None:
    """One line on stderr, written whole: a step announces its start from the thread it runs
    on while the run reports ends from another, and ``print`` writes the text and its newline
    apart, which can splice two lines into one."""
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()


def started_line(step: str, action: str, attempt: int) -> str:
    """``  > reviewer     execute started`` (``<`` for a compensation): the line that comes
    before the step's outcome, live or read back from its events."""
    if action == "compensate":
        return f"  < {step:<12} compensate started"
    again = f" (attempt {attempt})" if attempt > 1 else ""
    return f"  > {step:<12} {action} started{again}"


def page_printer(label: str) -> Callable[[int, int], None]:
    """``loading LABEL: page N/M`` on stderr: every page on a terminal (one line, rewritten),
    about every tenth of the paper otherwise, and always the last."""
    live = sys.stderr.isatty()

    def on_page(number: int, total: int) -> None:
        if live:
            end = "\n" if number == total else ""
            print(f"\rloading {label}: page {number}/{total}", end=end, file=sys.stderr, flush=True)
        elif number == total or number * 10 // total != (number - 1) * 10 // total:
            say(f"loading {label}: page {number}/{total}")

    return on_page
