"""Small file-writing participants for choreography tests, importable by agent subprocesses.

Each step writes ``<root>/<saga_id>/<step>.txt`` and, once that write is done, appends
``<saga_id> <step>`` to ``<root>/executions.log``; its compensation deletes the file and
appends ``<saga_id> <step>`` to ``<root>/compensations.log``. The saga's input steers them:

- ``{"halt_at": STEP}``: that step decides the saga must stop (like an invalid paper);
- ``{"flaky": {STEP: N}}``: that step raises on its first N attempts (retries absorb it);
- ``{"broken": STEP}``: that step always raises (the saga compensates);
- ``{"hold_at": STEP}``: that step, once started, writes ``<root>/<saga_id>.<step>.holding``
  and waits (up to a minute) until ``<root>/<saga_id>.release`` exists, so a test can act
  while the step is in flight.

``SAGAGRAPH_TEST_CRASH=STEP:SAGA_ID`` kills the process with ``os._exit`` in the middle of
that step's execute (after its file is half-written), once: a marker file remembers it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sagagraph import Retry, SagaDefinition, Step, StepContext, StepResult
from sagagraph.agents.paper_saga import PAPER_EVENT_NAMES, PAPER_SAGA

CRASH_ENV = "SAGAGRAPH_TEST_CRASH"
CRASH_EXIT_CODE = 86


def _append(path: Path, line: str) -> None:
    # O_APPEND writes of one short line are atomic, even across processes.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


HOLD_LIMIT = 60.0


def holding_marker(root: Path, saga_id: str, step: str) -> Path:
    return root / f"{saga_id}.{step}.holding"


def release(root: Path, saga_id: str) -> None:
    """Let a step held by ``{"hold_at": STEP}`` go on."""
    (root / f"{saga_id}.release").write_text("")


def hold(root: Path, saga_id: str, step: str) -> None:
    holding_marker(root, saga_id, step).write_text("")
    deadline = time.monotonic() + HOLD_LIMIT
    while not (root / f"{saga_id}.release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{step} held for {saga_id} and never released")
        time.sleep(0.02)


class FileStep:
    """A participant whose committed work is one file."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root

    def path(self, saga_id: str) -> Path:
        return self.root / saga_id / f"{self.name}.txt"

    def execute(self, ctx: StepContext) -> StepResult:
        if ctx.input.get("broken") == self.name:
            raise RuntimeError(f"{self.name} is broken for this saga")
        flaky = ctx.input.get("flaky") or {}
        if ctx.attempt <= int(flaky.get(self.name, 0)):
            raise ConnectionError(f"{self.name}: transient failure on attempt {ctx.attempt}")
        if ctx.input.get("halt_at") == self.name:
            return StepResult(halt=True, reason=f"{self.name} refused the input", data={"ok": 0})
        if ctx.input.get("hold_at") == self.name:
            hold(self.root, ctx.saga_id, self.name)
        path = self.path(ctx.saga_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        seen = sorted(ctx.results)
        text = f"{self.name} for {ctx.saga_id} after {','.join(seen) or 'nothing'}\n"
        path.write_text(text[: len(text) // 2])
        if os.environ.get(CRASH_ENV) == f"{self.name}:{ctx.saga_id}":
            marker = self.root / f"crashed-{self.name}-{ctx.saga_id}"
            if not marker.exists():
                marker.write_text("")
                os._exit(CRASH_EXIT_CODE)
        path.write_text(text)
        _append(self.root / "executions.log", f"{ctx.saga_id} {self.name}")
        return StepResult(data={"step": self.name, "saw": seen}, output=str(path))

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.path(ctx.saga_id).unlink(missing_ok=True)
        _append(self.root / "compensations.log", f"{ctx.saga_id} {self.name}")


PAPER_STEPS = ("validator", "reviewer", "summarizer")


def file_saga(
    root: Path,
    *,
    name: str = "paper_review",
    steps: tuple[str, ...] = PAPER_STEPS,
    retries: int = 3,
) -> SagaDefinition:
    """A saga of FileSteps; named ``paper_review`` by default, and then it uses the paper's
    events."""
    root.mkdir(parents=True, exist_ok=True)
    paper = name == PAPER_SAGA and steps == PAPER_STEPS
    return SagaDefinition.of(
        name,
        [
            Step(
                FileStep(s, root),
                retry=Retry(max_attempts=retries, retry_on=(ConnectionError,)),
                compensation_retry=Retry(max_attempts=3),
                can_halt=True,
            )
            for s in steps
        ],
        event_names=PAPER_EVENT_NAMES if paper else None,
    )


def file_saga_for(default_root: Path) -> Callable[[Mapping[str, Any]], SagaDefinition]:
    """The file saga whose files go under the saga input's ``root`` (else ``default_root``):
    what the paper app does with the outputs folder its ``run`` recorded."""

    def definition_for(saga_input: Mapping[str, Any]) -> SagaDefinition:
        return file_saga(Path(saga_input.get("root") or default_root))

    return definition_for


def log_lines(root: Path, log: str) -> list[str]:
    path = root / log
    return path.read_text().splitlines() if path.exists() else []


def outputs_of(root: Path, saga_id: str) -> list[str]:
    """Names of the files a saga left behind."""
    folder = root / saga_id
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []
