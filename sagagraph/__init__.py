"""sagagraph: run LLM agents as one all-or-nothing transaction, with the Saga pattern, on LangGraph.

This is the engine's public API: the participant contract, the graph builder and its runners,
recovery, checkpointers, the state and its JSON view, saga ids, compensable tools and the
errors callers catch. Other modules are internal and may change; the rest of the error
hierarchy is in :mod:`sagagraph.errors`, the pictures in :mod:`sagagraph.plotting`, and the
paper app (the validator, reviewer and summarizer built on the engine) in
:mod:`sagagraph.agents`.

Each name is imported on first use (PEP 562): ``import sagagraph`` loads neither LangGraph nor
a model client, and an optional extra (aio-pika, celery, langchain) is needed only by the names
that use it.
"""

import logging
from typing import TYPE_CHECKING

__version__ = "0.1.0"

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.blackboard.builder import build_blackboard_graph
    from sagagraph.checkpoints.async_factory import open_async_checkpointer
    from sagagraph.checkpoints.factory import open_checkpointer
    from sagagraph.choreography import run_choreographed_saga, start_choreographed_saga
    from sagagraph.errors import (
        CompensatedKeyError,
        CompensationFailedError,
        ConfigurationError,
        InjectedFailure,
        InputError,
        IrreversibleToolError,
        SagaBusyError,
        SagaGraphError,
        SagaNotFoundError,
        StepError,
        StepTimeoutError,
        ToolUndoError,
    )
    from sagagraph.graph.async_runner import aresume_saga, arun_saga, asaga_status
    from sagagraph.graph.builder import build_saga_graph
    from sagagraph.graph.recover import (
        recover_saga,
        recover_sagas,
        rollback_saga,
        unfinished_sagas,
    )
    from sagagraph.graph.routing import RouterOptions
    from sagagraph.graph.runner import (
        resolve_saga,
        resume_saga,
        run_saga,
        saga_config,
        saga_status,
    )
    from sagagraph.graph.state import SagaState
    from sagagraph.saga.hooks import SagaHooks
    from sagagraph.saga.names import new_saga_id, validate_saga_id
    from sagagraph.saga.protocol import (
        Participant,
        Retry,
        SagaDefinition,
        Step,
        StepContext,
        StepResult,
        Usage,
        participant,
    )
    from sagagraph.saga.view import Event, Status, saga_view
    from sagagraph.service import SagaService, SagaStore
    from sagagraph.tools import (
        ToolCall,
        ToolCompensationMiddleware,
        agent_step,
        compensable,
        create_compensating_agent,
        idempotency_key,
        irreversible,
        read_only,
    )

_EXPORTS = {
    "sagagraph.blackboard.builder": "build_blackboard_graph",
    "sagagraph.checkpoints.async_factory": "open_async_checkpointer",
    "sagagraph.checkpoints.factory": "open_checkpointer",
    "sagagraph.choreography": "run_choreographed_saga start_choreographed_saga",
    "sagagraph.errors": (
        "CompensatedKeyError CompensationFailedError ConfigurationError InjectedFailure "
        "InputError IrreversibleToolError SagaBusyError SagaGraphError SagaNotFoundError "
        "StepError StepTimeoutError ToolUndoError"
    ),
    "sagagraph.graph.async_runner": "aresume_saga arun_saga asaga_status",
    "sagagraph.graph.builder": "build_saga_graph",
    "sagagraph.graph.routing": "RouterOptions",
    "sagagraph.graph.runner": "resolve_saga resume_saga run_saga saga_config saga_status",
    "sagagraph.graph.state": "SagaState",
    "sagagraph.graph.recover": "recover_saga recover_sagas rollback_saga unfinished_sagas",
    "sagagraph.saga.hooks": "SagaHooks",
    "sagagraph.saga.names": "new_saga_id validate_saga_id",
    "sagagraph.saga.protocol": "Participant Retry SagaDefinition Step StepContext StepResult "
    "Usage participant",
    "sagagraph.saga.view": "Event Status saga_view",
    "sagagraph.service": "SagaService SagaStore",
    "sagagraph.tools": (
        "ToolCall ToolCompensationMiddleware agent_step compensable create_compensating_agent "
        "idempotency_key irreversible read_only"
    ),
}
"""Each module that defines public names, and those names (the TYPE_CHECKING imports above)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# A library logs; the application decides where it goes (the CLI configures handlers).
logging.getLogger("sagagraph").addHandler(logging.NullHandler())


__all__ = [
    "CompensatedKeyError",
    "CompensationFailedError",
    "ConfigurationError",
    "Event",
    "InjectedFailure",
    "InputError",
    "IrreversibleToolError",
    "Participant",
    "Retry",
    "RouterOptions",
    "SagaBusyError",
    "SagaDefinition",
    "SagaGraphError",
    "SagaHooks",
    "SagaNotFoundError",
    "SagaService",
    "SagaState",
    "SagaStore",
    "Status",
    "Step",
    "StepContext",
    "StepError",
    "StepResult",
    "StepTimeoutError",
    "ToolCall",
    "ToolCompensationMiddleware",
    "ToolUndoError",
    "Usage",
    "__version__",
    "agent_step",
    "aresume_saga",
    "arun_saga",
    "asaga_status",
    "build_blackboard_graph",
    "build_saga_graph",
    "compensable",
    "create_compensating_agent",
    "idempotency_key",
    "irreversible",
    "new_saga_id",
    "open_async_checkpointer",
    "open_checkpointer",
    "participant",
    "read_only",
    "recover_saga",
    "recover_sagas",
    "resolve_saga",
    "resume_saga",
    "rollback_saga",
    "run_choreographed_saga",
    "run_saga",
    "saga_config",
    "saga_status",
    "saga_view",
    "start_choreographed_saga",
    "unfinished_sagas",
    "validate_saga_id",
]
