"""Child processes of tests that send them signals: their own handlers, and never left behind.

A test run started with SIGINT ignored (``nohup make test &``, some CI runners) passes that to
every child, since an ignored signal stays ignored across ``exec``: a Ctrl-C test's child
could then not be interrupted, and Python does not install its KeyboardInterrupt handler in a
process that starts with SIGINT ignored. :func:`default_signals` (a ``preexec_fn``) gives the
child the default handlers of the signals tests send. :func:`reaped` kills a child still
running when its test ends, also by a failure or pytest-timeout's exception, so that no
process outlives its test.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from typing import TypeVar

SENT = (signal.SIGINT, signal.SIGTERM)
"""The signals tests send to ask a child to stop (SIGKILL cannot be ignored)."""

P = TypeVar("P", bound=subprocess.Popen)  # type: ignore[type-arg]


def default_signals() -> None:
    """``preexec_fn``: the child starts with the default action for :data:`SENT`, whatever
    its parent ignored (it runs in the child, between ``fork`` and ``exec``)."""
    for sent in SENT:
        signal.signal(sent, signal.SIG_DFL)


def reap(proc: subprocess.Popen, wait: float = 30) -> None:  # type: ignore[type-arg]
    """Kill ``proc`` (SIGKILL) if it still runs, and wait for it."""
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait)


@contextlib.contextmanager
def reaped(proc: P, *, wait: float = 30) -> Iterator[P]:
    """``proc``, killed and waited for if it still runs when the block ends (:func:`reap`)."""
    try:
        yield proc
    finally:
        reap(proc, wait)
