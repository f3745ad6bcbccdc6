"""LangGraph's PostgreSQL savers, each checkpoint's metadata stamped with its saga's summary
(as :mod:`sagagraph.checkpoints.savers` for SQLite). A module of its own, since PostgreSQL is
an extra (``make extra EXTRA=postgres`` in the checkout).
"""

from __future__ import annotations

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from sagagraph.checkpoints.savers import Stamping


class SagaPostgresSaver(Stamping, PostgresSaver):
    """``PostgresSaver`` that stamps the saga's summary into each checkpoint's metadata."""


class SagaAsyncPostgresSaver(Stamping, AsyncPostgresSaver):
    """``AsyncPostgresSaver`` that stamps the saga's summary into each checkpoint's metadata."""
