"""Refinements: a knowledge source revisits its own entry once other entries exist.

A :class:`Refinement` is a step of its own (so the kernel's attempt loop, timeout and events
apply) that posts the next version of an existing topic. The blackboard's user passes its
refinements to :func:`~sagagraph.blackboard.builder.build_blackboard_graph`; the paper app's
is in :mod:`sagagraph.agents.paper_blackboard`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sagagraph.saga.protocol import Step


@dataclass(frozen=True)
class Refinement:
    """A step that posts a new version of ``topic`` once every topic in ``after`` is live."""

    step: Step
    """The refinement's own step (its name is not a saga step's; its author is ``topic``)."""
    topic: str
    """The topic it refines: the step name of the knowledge source that owns it."""
    after: tuple[str, ...]
    """Topics that must be on the board (live) before it may run."""

    @property
    def name(self) -> str:
        return self.step.name
