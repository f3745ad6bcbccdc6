"""The time axis of a saga's timeline: elapsed time from the saga's first recorded moment.

Each event has the time it was recorded (``ts``); an ``execute`` or ``compensate`` event also
has when its attempt began (``started``, see :func:`sagagraph.saga.view.timed`). The axis maps
milliseconds since the first of these moments to pixels, and puts a tick every 1, 2 or 5
times a power of ten so that about eight of them label it, as a waterfall chart does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sagagraph.saga.view import stamp_ms

TARGET_TICKS = 8
"""About how many ticks label the axis."""


def moments(event: Mapping[str, Any]) -> tuple[int, int]:
    """When an event's attempt began and when the event was recorded, in epoch milliseconds
    (the same moment twice for an event that is no attempt, or that was recorded before
    attempts kept their start)."""
    end = stamp_ms(str(event["ts"]))
    started = event.get("started")
    return (stamp_ms(str(started)) if started else end), end


@dataclass(frozen=True)
class TimeAxis:
    """Epoch milliseconds ``start`` to ``start + span``, drawn over ``width`` pixels from
    ``left``."""

    start: int
    span: int
    left: float
    width: float

    @classmethod
    def over(cls, stamps: Iterable[int], left: float, width: float) -> TimeAxis:
        """The axis that shows every moment of ``stamps`` (at least one millisecond long)."""
        found = list(stamps) or [0]
        first = min(found)
        return cls(first, max(max(found) - first, 1), left, width)

    def x(self, ms: int) -> float:
        """Where moment ``ms`` (epoch milliseconds) is drawn."""
        return round(self.left + (ms - self.start) * self.width / self.span, 1)

    def ticks(self) -> list[tuple[int, float, str]]:
        """The axis's ticks: (elapsed milliseconds, x, label), from 0 to the end."""
        step = tick_step(self.span)
        return [
            (elapsed, self.x(self.start + elapsed), elapsed_label(elapsed, step))
            for elapsed in range(0, self.span + 1, step)
        ]


def tick_step(span: int) -> int:
    """1, 2 or 5 times a power of ten milliseconds: about :data:`TARGET_TICKS` ticks."""
    power = 1
    while True:
        for factor in (1, 2, 5):
            if span / (factor * power) <= TARGET_TICKS:
                return factor * power
        power *= 10


def elapsed_label(ms: int, step: int) -> str:
    """``ms`` as a tick's label, in the unit the step suits (``0.25 s``, ``90 s``, ``12 min``)."""
    if step >= 60_000 and step % 60_000 == 0:
        return f"{ms // 60_000} min"
    if step >= 1000:
        return f"{ms / 1000:g} s"
    decimals = 3 if step < 10 else 2 if step < 100 else 1
    return f"{ms / 1000:.{decimals}f} s"
