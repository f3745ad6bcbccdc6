"""Kill the process from inside a checkpointer: right after its N-th ``put`` or ``put_writes``.

The two kill windows LangGraph leaves between a step and its checkpoint: after
``put_writes`` (the step's writes are stored as pending writes, the next checkpoint is not
written yet) and after ``put`` (the checkpoint is written, the next step has not begun).
:func:`arm` patches one saver *instance* (sync and async methods alike), so the saver stays
the class the runner and the leases recognise. Test-only: production code has no such hook.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Method = Literal["put", "put_writes"]
How = Literal["exit", "sigkill"]

KILL_EXIT_CODE = 19
"""Exit status of a process killed by ``os._exit`` after a checkpointer call."""

METHODS: tuple[Method, ...] = ("put", "put_writes")
_ASYNC = {"put": "aput", "put_writes": "aput_writes"}


@dataclass
class CallCounter:
    """How many times each checkpointer method ran (sync and async counted together)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METHODS, 0))


def die(how: How) -> None:
    """End the process at once: no cleanup, no exception handler, no flush."""
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(KILL_EXIT_CODE)


def arm(
    saver: Any,
    counter: CallCounter,
    *,
    kill_at: tuple[Method, int] | None = None,
    how: How = "exit",
    asynchronous: bool = False,
) -> None:
    """Count ``saver``'s writes in ``counter``; with ``kill_at=(method, n)``, die right after
    the n-th call of ``method`` returned (its data is stored).

    ``asynchronous`` patches ``aput``/``aput_writes`` (what ``ainvoke`` calls) instead of the
    sync methods; only one side is patched, since some savers' async methods call the sync.
    """

    def after(method: Method) -> None:
        counter.counts[method] += 1
        if kill_at == (method, counter.counts[method]):
            die(how)

    def sync_wrapper(method: Method, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            after(method)
            return result

        return wrapped

    def async_wrapper(method: Method, original: Callable[..., Any]) -> Callable[..., Any]:
        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            after(method)
            return result

        return wrapped

    for method in METHODS:
        if asynchronous:
            name = _ASYNC[method]
            setattr(saver, name, async_wrapper(method, getattr(saver, name)))
        else:
            setattr(saver, method, sync_wrapper(method, getattr(saver, method)))
