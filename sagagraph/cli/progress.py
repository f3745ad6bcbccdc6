"""Progress on stderr for the long phases: loading a PDF page by page, each step as it starts.

Step *ends* come from the saga's events (``output.progress_printer``); a step's start is not an
event, so the CLI wraps each participant to announce it. A choreographed run's lines are read
back from its events once it ends (``output.trail_lines``), in the order they were recorded.
Everything goes to stderr, so the JSON on stdout stays clean under ``--json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sagagraph.saga.protocol import SagaDefinition, StepContext, StepResult

STARTED = ("execute", "compensate")
"""The actions whose start has a progress line of its own."""


def say(text: str) -> None:
    """One line on stderr, written whole: a step announces its start from the thread it runs
    on while the run reports ends from another, and ``print`` writes the text and its newline
    apart, which can splice two lines into one."""
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()


class Announced:
    """A participant that says on stderr when its execute or compensate starts."""

    def __init__(self, inner: Any, show: Callable[[str], None]) -> None:
        self.inner = inner
        self.name: str = inner.name
        self._show = show

    def execute(self, ctx: StepContext) -> StepResult:
        self._show(started_line(self.name, "execute", ctx.attempt))
        result: StepResult = self.inner.execute(ctx)
        return result

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self._show(started_line(self.name, "compensate", ctx.attempt))
        self.inner.compensate(ctx, result)


def started_line(step: str, action: str, attempt: int) -> str:
    """``  > reviewer     execute started`` (``<`` for a compensation): the line that comes
    before the step's outcome, live or read back from its events."""
    if action == "compensate":
        return f"  < {step:<12} compensate started"
    again = f" (attempt {attempt})" if attempt > 1 else ""
    return f"  > {step:<12} {action} started{again}"


def announce_steps(definition: SagaDefinition, show: Callable[[str], None] = say) -> SagaDefinition:
    """The same saga, whose steps say on stderr when each execute and compensate starts."""
    steps = tuple(replace(s, participant=Announced(s.participant, show)) for s in definition.steps)
    return replace(definition, steps=steps)


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
