"""The generator-with-two-drivers shape: the logic is a generator, two drivers run it.

A loop that must run under ``invoke`` and ``ainvoke`` alike (a step's attempts, the LLM
router's decision) is written once as a generator that yields what it needs done (a call, a
wait, a model request) and is sent the answer. A sync driver and an async driver answer the
requests; only they differ, so both paths decide and record the same things.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

Y = TypeVar("Y")
S = TypeVar("S")
R = TypeVar("R")


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
