"""Ctrl-C that takes effect at once, even while a model call blocks in an HTTP read.

SIGINT raises KeyboardInterrupt in the main thread only, and a thread blocked in a socket
read does not see it until the read returns (17 s for a slow model). So the saga runs in a
worker thread and the main thread waits on it in short slices: Ctrl-C lands in the wait,
the CLI reports the saga id and exits 130. The abandoned step has no checkpoint; the saga's
last checkpoint is the step before it, so ``sagagraph resume`` runs that step again.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.1
"""How long the main thread waits between looks at the worker: the Ctrl-C latency bound."""


class SagaInterrupted(Exception):
    """Ctrl-C while ``saga_id`` ran (None: before any saga existed)."""

    def __init__(self, saga_id: str | None, *, abandoned: bool = False) -> None:
        super().__init__(saga_id or "nothing was started")
        self.saga_id = saga_id
        self.abandoned = abandoned
        """True when a call is still in flight in a worker thread: the process must end
        without joining it (LangGraph runs nodes in a thread pool the interpreter joins at
        exit, which would wait for the hung call)."""


def interruptible(fn: Callable[[], T], saga_id: str | None) -> T:
    """``fn()`` in a daemon worker thread; SagaInterrupted as soon as Ctrl-C is pressed."""
    box: dict[str, object] = {}
    context = contextvars.copy_context()
    # An Event, not Thread.join: a join interrupted by Ctrl-C can leave the thread marked
    # as stopped, and the CLI must know whether a call is still in flight.
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as error:  # carried to the main thread
            box["error"] = error
        finally:
            done.set()

    worker = threading.Thread(target=target, name=f"sagagraph:{saga_id}", daemon=True)
    worker.start()
    try:
        while not done.wait(POLL_SECONDS):
            pass
    except KeyboardInterrupt:
        raise SagaInterrupted(saga_id, abandoned=not done.is_set()) from None
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def during(fn: Callable[[], T], saga_id: str | None) -> T:
    """``fn()`` in this thread, with Ctrl-C reported as SagaInterrupted(saga_id)."""
    try:
        return fn()
    except KeyboardInterrupt:
        raise SagaInterrupted(saga_id) from None
