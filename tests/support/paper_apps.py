"""The paper saga compiled on a checkpointer, for tests that read or drive it directly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sagagraph.agents.paper_app import PaperApp, PaperSettings
from sagagraph.checkpoints.factory import open_checkpointer


@contextmanager
def paper_app(db: str, **settings: Any) -> Iterator[Any]:
    """The paper saga of ``settings`` (PaperSettings' fields) compiled on checkpointer ``db``."""
    recorded = PaperSettings.resolve(**settings).recorded()
    graph = PaperApp()({"settings": recorded})
    with open_checkpointer(db) as checkpointer:
        yield graph.compile(checkpointer=checkpointer)
