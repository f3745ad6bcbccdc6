"""What the work-queue tests share: papers that name their saga, a scripted model that counts
requests per paper, worker processes, and reading the sagas back from PostgreSQL.

``python -m tests.support.queue_support --die-on SAGA_ID -- worker ...`` runs the real ``sagagraph``
CLI in a process that dies (``os._exit``) whenever a step of that saga writes its output: a
worker that dies on the same saga every time. ``--die-once KEY:write|compensate:MARKER``
(KEY: a saga id, or ``SAGA_ID:STEP`` for one step)
dies only the first time, of all the processes given the same marker file (a crash
mid-saga or mid-compensation at a chosen point). ``--hand-back-after SECONDS`` makes the
worker hand a saga back (a saga it does not run, a busy one, an error) after that many seconds
instead of ``ERROR_RETRY``, so a test sees the bounded hand-backs end in seconds. Nothing here
is part of the package.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.support.child_processes import default_signals, reap
from tests.support.openai_server import (
    Reply,
    ScriptedOpenAIServer,
    quoted,
    request_text,
    structured,
    wants_schema,
)

REPO = Path(__file__).resolve().parents[2]
DIE_EXIT_CODE = 17
PAPER_FILES = {"validator": "validation.txt", "reviewer": "review.txt", "summarizer": "summary.txt"}
SCHEMA_STEP = {
    "ValidationReport": "validator",
    "QuotedReview": "reviewer",
    "Summary": "summarizer",
}
SECTIONS = ["Abstract", "1 Introduction", "2 Related Work", "3 Method", "4 Experiments"]
SECTIONS += ["5 Conclusion"]
FOUND = [
    ("abstract", "Abstract"),
    ("introduction", "1 Introduction"),
    ("body", "2 Related Work"),
    ("method", "3 Method"),
    ("conclusion", "5 Conclusion"),
    ("references", "References"),
]


REFERENCES = """[1] H. Garcia-Molina and K. Salem. Sagas. In Proc. SIGMOD, pages 249-259, 1987.

[2] J. Gray and A. Reuter. Transaction Processing: Concepts and Techniques. Morgan Kaufmann, 1992.

[3] C. Richardson. Microservices Patterns. Manning Publications, 2018.

[4] P. A. Bernstein and E. Newcomer. Principles of Transaction Processing. Morgan Kaufmann, 2009."""


def marker(index: int) -> str:
    """A word only paper ``index`` contains: every model request about it carries it."""
    return f"zq{index:04d}x"


def write_papers(folder: Path, count: int) -> list[Path]:
    """``count`` complete papers, each with its own marker in the title."""
    folder.mkdir(parents=True, exist_ok=True)
    papers = []
    for i in range(count):
        parts = [f"# Sagas for Agents, copy {marker(i)}"]
        for heading in SECTIONS:
            sentences = " ".join(
                f"Sentence {n} of the {heading.lower()} part explains how sagas keep agent "
                "pipelines all or nothing in practice."
                for n in range(12)
            )
            parts.append(f"## {heading}\n\n{sentences}")
        parts.append("## References\n\n" + REFERENCES)
        path = folder / f"paper-{i:04d}.md"
        path.write_text("\n\n".join(parts) + "\n")
        papers.append(path)
    return papers


class CountingModel:
    """A well-behaved scripted model that records, per paper marker and step, when each
    request arrived (wall clock, as checkpoints record theirs)."""

    def __init__(self, count: int, delay: float = 0.0) -> None:
        self.markers = {marker(i): i for i in range(count)}
        self.delay = delay
        self.calls: dict[tuple[int, str], list[float]] = defaultdict(list)
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        text = request_text(request)
        step = SCHEMA_STEP.get(wants_schema(request) or "", "")
        found = [i for m, i in self.markers.items() if m in text]
        with self._lock:
            self.calls[(found[0] if len(found) == 1 else -1, step)].append(time.time())
        if step == "validator":
            report = {
                "is_valid": True,
                "found": [{"part": p, "heading": h, "page": 1} for p, h in FOUND],
                "missing": [],
                "reason": "All required parts are present.",
            }
            reply = structured(request, report)
        elif step == "reviewer":
            point = quoted(
                "The paper states its aim plainly.",
                "explains how sagas keep agent pipelines all or nothing in practice",
            )
            review = {"strengths": [point], "weaknesses": [point], "suggestions": [point]}
            reply = structured(request, review)
        elif step == "summarizer":
            # Exactly 300 words of whole sentences: a draft of another length is sent back for
            # revision (a request the counts below would see as one more call).
            words = " ".join(
                f"The paper shows result number {n} about sagas and agents." for n in range(30)
            )
            reply = structured(request, {"text": words})
        else:
            return Reply(status=400, content="unexpected request")
        reply.delay = self.delay
        return reply


@contextmanager
def counting_server(count: int, delay: float = 0.0) -> Iterator[tuple[Any, CountingModel]]:
    model = CountingModel(count, delay)
    with ScriptedOpenAIServer(model) as server:
        yield server, model


def worker_env(base_url: str | None = None) -> dict[str, str]:
    """The environment of a worker process: no sagagraph settings but the model's address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env["PYTHONPATH"] = str(REPO)
    if base_url is not None:
        env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test-worker-key"}
    return env


class WorkerProcess:
    """One ``sagagraph worker`` process whose stderr lines are collected as they come."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str],
        die_on: str = "",
        die_once: str = "",
        hand_back_after: float | None = None,
        verb: str = "worker",
    ):
        prefix = [sys.executable, "-m", "tests.support.queue_support"]
        prefix += ["--hand-back-after", str(hand_back_after)] if hand_back_after else []
        prefix += ["--die-on", die_on] if die_on else []
        prefix += ["--die-once", die_once] if die_once else []
        self.proc = subprocess.Popen(
            [*prefix, "--", verb, *args],
            cwd=cwd,
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            preexec_fn=default_signals,  # SIGTERM stops it even if this run ignores it
        )
        self.lines: list[str] = []
        self.seen: list[float] = []
        """When each line arrived (``time.perf_counter()``), for benchmarks."""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.seen.append(time.perf_counter())
            self.lines.append(line.rstrip("\n"))

    def count(self, text: str) -> int:
        return sum(1 for line in list(self.lines) if text in line)

    def first_seen(self, text: str) -> float:
        return next(t for t, line in zip(self.seen, self.lines, strict=False) if text in line)

    def last_seen(self, text: str) -> float:
        return max(t for t, line in zip(self.seen, self.lines, strict=False) if text in line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.reap()

    def terminate(self, timeout: float = 120, started: str = "worker: consuming") -> int:
        """SIGTERM once it has started, then its exit status (one already gone is only reaped)."""
        wait_for(
            lambda: not self.alive() or self.count(started),
            timeout=60,
            what="the process to start",
        )
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        return self.reap(timeout)

    def reap(self, timeout: float = 30) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # the test fails, and leaves no worker behind
            reap(self.proc)
            raise
        self._reader.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        return code


def wait_for(condition: Any, *, timeout: float, what: str, every: float = 0.2) -> None:
    """Poll ``condition()`` until it is true; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def unique_queue(amqp_url: str, **params: int) -> str:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return f"{amqp_url}?queue=sagagraph-test-{uuid.uuid4().hex[:10]}{extra}"


def delete_queue(url: str) -> None:
    """Remove a test's queue and its exchange from the broker."""
    from sagagraph.workers.address import queue_address
    from sagagraph.workers.broker import delete_queue as delete

    delete(queue_address(url))


def commit_times(app: Any, saga_id: str) -> dict[str, float]:
    """When each step committed: the creation time of the first checkpoint holding its
    ``execute ok`` event."""
    from sagagraph.graph.runner import saga_config

    committed: dict[str, float] = {}
    for snap in app.get_state_history(saga_config(saga_id)):  # newest first
        for event in snap.values.get("events") or []:
            if event["action"] == "execute" and event["outcome"] == "ok" and snap.created_at:
                committed[event["step"]] = datetime.fromisoformat(snap.created_at).timestamp()
    return committed


def files_of(outputs: Path, saga_id: str) -> list[str]:
    folder = outputs / saga_id
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _die_on(saga_id: str) -> None:
    """Make this process die whenever a step of ``saga_id`` writes its output."""
    from sagagraph.agents import store as store_module

    original = store_module.OutputStore.write

    def write(self: Any, key: str, name: str, text: str) -> Path:
        if key.startswith(f"{saga_id}:"):
            os._exit(DIE_EXIT_CODE)
        return original(self, key, name, text)

    store_module.OutputStore.write = write  # type: ignore[method-assign]


def _die_once(saga_id: str, action: str, marker: str) -> None:
    hang = action.startswith("hang-")
    action = action.removeprefix("hang-")
    """Make this process die the first time (of all processes that share ``marker``, a file)
    a step of ``saga_id`` does ``action`` on its output: ``write`` (mid-saga) or
    ``compensate`` (mid-compensation)."""
    from sagagraph.agents import store as store_module

    original = getattr(store_module.OutputStore, action)

    def dying(self: Any, key: str, *args: Any, **kwargs: Any) -> Any:
        if key == saga_id or key.startswith(f"{saga_id}:"):
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                if hang:  # alive but stuck: only a time limit gets the saga back
                    time.sleep(3600)
                os._exit(DIE_EXIT_CODE)
        return original(self, key, *args, **kwargs)

    setattr(store_module.OutputStore, action, dying)


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    while argv[:1] in (["--die-on"], ["--die-once"], ["--hand-back-after"]):
        if argv[0] == "--die-on":
            _die_on(argv[1])
        elif argv[0] == "--hand-back-after":
            from sagagraph.workers import celery_app

            celery_app.ERROR_RETRY = float(argv[1])
        else:
            _die_once(*argv[1].rsplit(":", 2))
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    from sagagraph.cli.entry import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
