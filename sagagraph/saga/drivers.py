"""The generator-with-two-drivers shape: the logic is a generator, two drivers run it.

Logic that must run under ``invoke`` and ``ainvoke`` alike (a step's attempts, a graph node, a
router's decision) is written once as a generator that yields what it needs done and is sent
the answer. A sync driver and an async driver answer the requests; only they differ, so both
paths decide and record the same things.

The attempt loops have drivers of their own (timeouts, the step pool). Everything else yields
:class:`Effect` objects, which say how each driver does them (:func:`drive`, :func:`adrive`):
a step's execute or compensate, a model call, telling the hooks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Generic, ParamSpec, Protocol, TypeVar, cast

Y = TypeVar("Y")
S = TypeVar("S")
R = TypeVar("R")
P = ParamSpec("P")


@dataclass(frozen=True)
class Returned(Generic[R]):
    """What a generator driven by :func:`advance` returned (it has finished)."""

    value: R


def advance(loop: Generator[Y, S, R], sent: S | None = None) -> Y | Returned[R]:
    """Send ``sent`` into ``loop`` (None starts it): its next request, or what it returned."""
    try:
        return loop.send(cast(S, sent))
    except StopIteration as stop:
        return Returned(cast(R, stop.value))


class Effect(Protocol):
    """Something a flow needs done: ``run`` under the sync driver, ``arun`` under the async one."""

    def run(self) -> object: ...

    async def arun(self) -> object: ...


Flow = Generator[Effect, object, R]
"""Logic written once: yields effects, is sent what each came to, returns its result."""


def _thrown(flow: Flow[R], error: BaseException) -> Effect | Returned[R]:
    """Raise ``error`` in ``flow`` where it waits (it may handle it): its next request."""
    try:
        return flow.throw(error)
    except StopIteration as stop:
        return Returned(cast(R, stop.value))


def drive(flow: Flow[R]) -> R:
    """Run ``flow`` on this thread: each effect's ``run``; what one raises is raised in the
    flow, where it waits."""
    request = advance(flow)
    while not isinstance(request, Returned):
        try:
            done = request.run()
        except BaseException as error:
            request = _thrown(flow, error)
        else:
            request = advance(flow, done)
    return request.value


async def adrive(flow: Flow[R]) -> R:
    """Run ``flow`` on the event loop: each effect's ``arun`` awaited; what one raises is
    raised in the flow, where it waits."""
    request = advance(flow)
    while not isinstance(request, Returned):
        try:
            done = await request.arun()
        except BaseException as error:
            request = _thrown(flow, error)
        else:
            request = advance(flow, done)
    return request.value


class Tell(Generic[P]):
    """An effect that calls a hook: its sync form, or its async form awaited."""

    __slots__ = ("amethod", "args", "kwargs", "method")

    def __init__(
        self,
        method: Callable[P, None],
        amethod: Callable[P, Awaitable[None]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> None:
        self.method = method
        self.amethod = amethod
        self.args = args
        self.kwargs = kwargs

    def run(self) -> None:
        self.method(*self.args, **self.kwargs)

    async def arun(self) -> None:
        await self.amethod(*self.args, **self.kwargs)
