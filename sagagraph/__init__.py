"""sagagraph: run LLM agents as one all-or-nothing transaction, with the Saga pattern, on LangGraph.

Everything public is exported here; other modules are internal and may change.
"""

import logging

from sagagraph.agents.ids import new_saga_id, validate_saga_id
from sagagraph.agents.protocol import (
    Participant,
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    Usage,
    participant,
)
from sagagraph.agents.view import Event, Status, saga_view
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import (
    BusError,
    CompensatedKeyError,
    CompensationFailedError,
    ConfigurationError,
    InjectedFailure,
    InputError,
    InvalidSagaIdError,
    MalformedModelOutput,
    PaperLoadError,
    SagaGraphError,
    SagaNotFoundError,
    StepError,
    StepTimeoutError,
)
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.runner import (
    list_sagas,
    recover_sagas,
    resolve_saga,
    resume_saga,
    rollback_saga,
    run_saga,
    saga_config,
    saga_status,
    unfinished_sagas,
)
from sagagraph.graph.state import SagaState

__version__ = "0.1.0"

# A library logs; the application decides where it goes (the CLI configures handlers).
logging.getLogger("sagagraph").addHandler(logging.NullHandler())

__all__ = [
    "BusError",
    "CompensatedKeyError",
    "CompensationFailedError",
    "ConfigurationError",
    "Event",
    "InjectedFailure",
    "InputError",
    "InvalidSagaIdError",
    "MalformedModelOutput",
    "PaperLoadError",
    "Participant",
    "Retry",
    "SagaDefinition",
    "SagaGraphError",
    "SagaNotFoundError",
    "SagaState",
    "Status",
    "Step",
    "StepContext",
    "StepError",
    "StepResult",
    "StepTimeoutError",
    "Usage",
    "__version__",
    "build_saga_graph",
    "list_sagas",
    "new_saga_id",
    "open_checkpointer",
    "participant",
    "recover_sagas",
    "resolve_saga",
    "resume_saga",
    "rollback_saga",
    "run_saga",
    "saga_config",
    "saga_status",
    "saga_view",
    "unfinished_sagas",
    "validate_saga_id",
]
