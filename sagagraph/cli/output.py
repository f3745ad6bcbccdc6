"""What the CLI prints: exit codes, progress lines on stderr (loading a PDF page by page, each
step as it starts and ends, a choreographed run's trail read back from its events), a saga's
view on stdout. Everything but the view goes to stderr, so stdout stays JSON under
``--json``."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import Event, format_duration

STARTED = ("execute", "compensate")
"""The actions whose start has a progress line of its own."""


def say(text: str) -> None:
    """One line on stderr, written whole: a step announces its start from the thread it runs
    on while the run reports ends from another (a worker's threads speak at once too), and
    ``print`` writes the text and its newline apart, which can splice two lines into one."""
    with _say_lock:
        sys.stderr.write(f"{text}\n")
        sys.stderr.flush()


_say_lock = threading.Lock()


STEP_COLUMN = 12
"""The width of the step column of progress lines, widened to the longest step name shown."""


def step_width(steps: Iterable[str]) -> int:
    """The step column's width for these step names: :data:`STEP_COLUMN`, or wider."""
    return max([STEP_COLUMN, *(len(step) for step in steps)])


def started_line(step: str, action: str, attempt: int, width: int = STEP_COLUMN) -> str:
    """``  > reviewer     execute started`` (``<`` for a compensation): the line that comes
    before the step's outcome, live or read back from its events."""
    if action == "compensate":
        return f"  < {step:<{width}} compensate started"
    again = f" (attempt {attempt})" if attempt > 1 else ""
    return f"  > {step:<{width}} {action} started{again}"


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


EXIT_COMPLETED = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_ROLLED_BACK = 3
"""Rolled back after a failure: a step raised, and the committed steps were compensated."""
EXIT_NEEDS_OPERATOR = 4
EXIT_HALTED = 5
"""The saga was stopped on purpose, no step having failed: by a step (an invalid paper), or by
a cancel before any step ran. Rolled back, nothing written."""
EXIT_TRY_LATER = 75
"""Not finished yet: ``status`` of a queued or running saga, or ``recover`` leaving one
unfinished (a live process holds it): ask again later."""
EXIT_INTERRUPTED = 130

_STATUS_EXIT = {
    "completed": EXIT_COMPLETED,
    "rolled_back": EXIT_ROLLED_BACK,
    "resolved_by_operator": EXIT_ROLLED_BACK,
    "compensation_failed": EXIT_NEEDS_OPERATOR,
    "waiting_for_operator": EXIT_NEEDS_OPERATOR,
    # Only `status` sees these: the saga is not finished yet (or its process died).
    "queued": EXIT_TRY_LATER,
    "running": EXIT_TRY_LATER,
    "compensating": EXIT_TRY_LATER,
}

_MARK = {"ok": "+", "halted": "!", "error": "x", "retry": "~", "timeout": "x", "rejected": "?"}


def exit_code_for(view: dict[str, Any]) -> int:
    """The exit code a saga's final view maps to."""
    if view.get("waiting_for_operator") or view.get("dead_letter"):
        return EXIT_NEEDS_OPERATOR
    if view.get("status") == "rolled_back" and view.get("halted") and not view.get("failure"):
        return EXIT_HALTED
    return _STATUS_EXIT.get(str(view.get("status")), EXIT_UNEXPECTED)


def recover_exit_code(views: list[dict[str, Any]]) -> int:
    """``recover``: 0 when every saga it found is finished, 4 when one needs an operator
    (waiting for an answer, or dead-lettered by the work queue),
    75 when one is still unfinished (skipped as in use, its recovery failed, or its status is
    not final)."""
    if any(v.get("waiting_for_operator") or v.get("dead_letter") for v in views):
        return EXIT_NEEDS_OPERATOR
    if any(v.get("recover_skipped") or v.get("recover_error") or _unfinished(v) for v in views):
        return EXIT_TRY_LATER
    return EXIT_COMPLETED


def _unfinished(view: dict[str, Any]) -> bool:
    status = view.get("status")
    return bool(view.get("next")) or (status is not None and status not in TERMINAL_STATUSES)


def duration_text(event: Event) -> str:
    """How long the attempt an event ends took (``0.073 s``); empty when it has no duration."""
    took = event.get("duration_ms")
    return "" if took is None else format_duration(took)


def format_event(event: Event, width: int = STEP_COLUMN, *, timed: bool = False) -> str:
    """One progress line: ``  + validator    execute ok      outputs/s1/validation.txt``;
    ``timed``: with a column for the attempt's duration (``events``)."""
    mark = _MARK.get(event["outcome"], "-")
    attempt = f" (attempt {event['attempt']})" if event["attempt"] > 1 else ""
    detail = f"  {event['detail']}" if event["detail"] else ""
    action = f"{event['action']} {event['outcome']}{attempt}"
    took = f"{duration_text(event):>10}" if timed else ""
    return f"  {mark} {event['step']:<{width}} {action:<22}{took}{detail}".rstrip()


def trail_lines(events: Iterable[Event]) -> Iterator[str]:
    """A finished run's progress lines from its recorded events, in their recorded order: a
    ``started`` line before each execute or compensate attempt's first event, then the event
    (the agents of a choreography ran in threads or processes, so nothing printed live)."""
    begun: set[tuple[str, str, int]] = set()
    events = list(events)
    width = step_width(event["step"] for event in events)
    for event in events:
        attempt = (event["step"], event["action"], event["attempt"])
        if event["action"] in STARTED and attempt not in begun:
            begun.add(attempt)
            yield started_line(*attempt, width=width)
        yield format_event(event, width)


def shown_status(view: dict[str, Any]) -> str:
    """The status as a person reads it: ``queued (dead-lettered)``, ``running (orphaned)``
    when the view says so (``status`` adds those keys), else the status itself."""
    if view.get("dead_lettered"):
        return f"{view['status']} (dead-lettered)"
    if view.get("orphaned"):
        return f"{view['status']} (orphaned)"
    return str(view["status"])


def print_view(view: dict[str, Any], out: TextIO, *, foreign: str | None = None) -> None:
    """A human summary of a saga's view; ``foreign``: why this process cannot act on it."""
    print(f"saga {view['saga_id']}: {shown_status(view)}", file=out)
    if view.get("reason"):
        print(f"  reason: {view['reason']}", file=out)
    if view.get("dead_lettered"):
        detail = (view.get("dead_letter") or {}).get("detail") or "no detail"
        print(f"  dead-lettered by the work queue: {detail}", file=out)
    if view.get("orphaned"):
        print(
            "  orphaned: no live process runs it; `sagagraph recover` finishes it, "
            f"`sagagraph rollback {view['saga_id']}` rolls it back",
            file=out,
        )
    if view.get("completed"):
        print(f"  completed: {', '.join(view['completed'])}", file=out)
    if view.get("pivot"):
        side = "past it: only forward" if view.get("past_pivot") else "before it: can roll back"
        print(f"  pivot: {view['pivot']} ({side})", file=out)
    for lock in view.get("locks") or []:
        print(f"  holds lock: {lock['key']} (step {lock['step']}, since {lock['since']})", file=out)
    if view.get("compensated"):
        print(f"  compensated: {', '.join(view['compensated'])}", file=out)
    for step, path in (view.get("outputs") or {}).items():
        print(f"  output {step}: {path}", file=out)
    for skipped in view.get("skipped") or []:
        left = skipped.get("left_behind") or "nothing recorded"
        print(
            f"  skipped by an operator: {skipped['step']} ({skipped['note']}); left behind: {left}",
            file=out,
        )
    usage = view.get("usage") or {}
    if usage.get("input_tokens") or usage.get("output_tokens"):
        print(f"  tokens: {usage['input_tokens']} in, {usage['output_tokens']} out", file=out)
    for approval in view.get("approvals") or []:
        args = json.dumps(approval["args"], sort_keys=True)
        print(
            f"  waiting for approval: {approval['step']} {approval['tool']} {args} "
            f"(call {approval['call']}); run: sagagraph approve {view['saga_id']} "
            f"[--call {approval['call']}] [--edit JSON] | sagagraph reject {view['saga_id']} "
            "--why TEXT",
            file=out,
        )
    stuck = view.get("forward_failure")
    if view.get("waiting_for_operator") and (stuck or not view.get("approvals")):
        failed = stuck or view.get("compensation_failure") or {}
        what = "past the pivot," if stuck else "compensation of"
        how = foreign or f"run: sagagraph resolve {view['saga_id']} --retry | --skip --note TEXT"
        print(
            f"  needs an operator: {what} {failed.get('step')} failed ({failed.get('error')}); "
            f"{how}",
            file=out,
        )


def emit(view: dict[str, Any], as_json: bool, *, foreign: str | None = None) -> int:
    if as_json:
        json.dump(view, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_view(view, sys.stdout, foreign=foreign)
    return exit_code_for(view)


def emit_error(message: str, code: int) -> None:
    """A refused or failed command under ``--json``: ``{"error": ..., "exit": code}`` on
    stdout, so a script reading it parses one object, never an empty document. The same
    one-line message goes to stderr as without ``--json``."""
    json.dump({"error": message, "exit": code}, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def emit_rows(rows: Any, as_json: bool, render: Callable[[Any], str]) -> int:
    """Rows (a comparison) as indented JSON on stdout, or as the text ``render`` makes."""
    if as_json:
        json.dump(rows, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(render(rows))
    return EXIT_COMPLETED


class _Progress(SagaHooks):
    def __init__(self, width: int) -> None:
        self.width = width

    def _fit(self, step: str) -> int:
        # A step longer than the names announced widens the column from its line on.
        self.width = max(self.width, len(step))
        return self.width

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        if action in STARTED:
            say(started_line(step, action, attempt, self._fit(step)))

    def on_event(self, saga_id: str, event: Event) -> None:
        say(format_event(event, self._fit(event["step"])))


def progress_printer(steps: Iterable[str] = ()) -> SagaHooks:
    """Each step's start and each event as a progress line on stderr (also under
    ``--json``: stdout stays JSON), the step column as wide as the longest of ``steps``
    (the saga's step names, when known: the columns then line up from the first line)."""
    return _Progress(step_width(steps))
