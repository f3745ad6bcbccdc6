"""The application core: :class:`SagaService` (typed operations and one query API) over a
:class:`SagaStore` (checkpointer, event log, work queue) and the :class:`Definitions` it may
act on. Every surface (Python, CLI, console, workers) goes through it."""

from sagagraph.graph.definitions import Definitions, SagaFactory
from sagagraph.service.service import Recovered, SagaService
from sagagraph.service.store import SagaStore

__all__ = ["Definitions", "Recovered", "SagaFactory", "SagaService", "SagaStore"]
