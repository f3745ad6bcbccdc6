"""A paper engine built on its first model call, for commands that may only compensate.

Compensating the paper saga deletes files: it never asks the model. ``recover --compensate``,
``resume`` of a finished or compensating saga and ``resolve`` build the saga with this engine,
so an operator whose model key expired (or was never given to this shell) can still roll a
saga back; a step that does run forward builds the real engine then, and fails on a missing
key as ``run`` would.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from sagagraph.saga.protocol import Usage

if TYPE_CHECKING:
    from sagagraph.agents.engine import PaperEngine, Review, Summary, ValidationReport
    from sagagraph.agents.paper import Paper


class DeferredEngine:
    """The engine :func:`~sagagraph.agents.models.make_engine` would build for ``llm`` and
    ``model``, built on the first call of ``validate``, ``review`` or ``summarize``.

    ``name`` is known at once (it chooses the steps' retry policy) and needs no key.
    """

    def __init__(self, llm: str | None, model: str | None) -> None:
        from sagagraph.agents.models import resolve_llm

        self.name: str = resolve_llm(llm)
        self._llm = llm
        self._model = model
        self._engine: PaperEngine | None = None
        self._lock = threading.Lock()

    def _built(self) -> PaperEngine:
        with self._lock:
            if self._engine is None:
                from sagagraph.agents.models import make_engine

                self._engine = make_engine(self._llm, self._model)
            return self._engine

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        return self._built().validate(paper)

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        return self._built().review(paper)

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        return self._built().summarize(paper, words)
