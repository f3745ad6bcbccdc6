"""sagagraph: run LLM agents as one all-or-nothing transaction, with the Saga pattern, on LangGraph.

Everything public is exported here; other modules are internal and may change. Each name
is imported on first use (PEP 562): ``import sagagraph`` loads neither LangGraph nor a model
client, and an optional extra (langchain-openai, aio-pika, langchain) is needed only by the
names that use it.
"""

import importlib
import logging
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sagagraph.agents.engine import PaperEngine
    from sagagraph.agents.models import make_chat_model, make_engine, resolve_llm
    from sagagraph.agents.offline_engine import OfflineEngine
    from sagagraph.agents.openai_engine import OpenAIEngine
    from sagagraph.agents.paper import Paper, PaperTooShortError, Section
    from sagagraph.agents.paper_loader import PaperLoader
    from sagagraph.agents.paper_parsing import check_paper, load_paper
    from sagagraph.agents.paper_saga import PAPER_STEPS, paper_saga_definition
    from sagagraph.agents.schemas import PartFound, Review, Summary, ValidationReport
    from sagagraph.agents.store import OutputStore
    from sagagraph.blackboard.board import BoardEntry, BoardState
    from sagagraph.blackboard.builder import build_blackboard_graph, paper_blackboard_graph
    from sagagraph.blackboard.refinement import Refinement
    from sagagraph.checkpoints.async_factory import open_async_checkpointer
    from sagagraph.checkpoints.factory import open_checkpointer
    from sagagraph.checkpoints.saga_index import SagaSummary, latest_checkpoints
    from sagagraph.choreography import (
        EventBus,
        EventNames,
        choreography_status,
        derive_choreography,
        open_bus,
        register_event_names,
        run_agent,
        run_choreographed_saga,
        saga_events,
        start_choreographed_saga,
        wait_for_sagas,
    )
    from sagagraph.compare import RouterRun, compare_routers, render_comparison
    from sagagraph.compare_modes import ModeRun, compare_modes, render_mode_comparison
    from sagagraph.errors import (
        AgentRunError,
        BusError,
        CompensatedKeyError,
        CompensationFailedError,
        ConfigurationError,
        InjectedFailure,
        InputError,
        InvalidSagaIdError,
        IrreversibleToolError,
        MalformedModelOutput,
        ModelCallError,
        PaperLoadError,
        SagaBusyError,
        SagaGraphError,
        SagaNotFoundError,
        StepError,
        StepTimeoutError,
        ToolUndoError,
    )
    from sagagraph.graph.async_runner import aresume_saga, arun_saga, asaga_status
    from sagagraph.graph.builder import build_saga_graph
    from sagagraph.graph.router_options import RouterOptions
    from sagagraph.graph.runner import (
        list_sagas,
        resolve_saga,
        resume_saga,
        run_saga,
        saga_config,
        saga_status,
    )
    from sagagraph.graph.state import SagaState
    from sagagraph.graph.submit import SagaRequest, submit_saga, submit_sagas
    from sagagraph.graph.unfinished import (
        open_sagas,
        recover_saga,
        recover_sagas,
        rollback_saga,
        unfinished_sagas,
        waiting_sagas,
    )
    from sagagraph.graph.worker import WorkerTally, arun_worker, run_worker
    from sagagraph.plotting import (
        draw_choreography,
        draw_saga_graph,
        plot_board,
        plot_saga_timeline,
        plot_saga_timelines,
        records_table,
    )
    from sagagraph.saga.guard import FINISH, Accepted, Rejected, guard
    from sagagraph.saga.ids import new_saga_id, validate_saga_id
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
    from sagagraph.tools import (
        AgentParticipant,
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
    "sagagraph.agents.engine": "PaperEngine",
    "sagagraph.agents.models": "make_chat_model make_engine resolve_llm",
    "sagagraph.agents.offline_engine": "OfflineEngine",
    "sagagraph.agents.openai_engine": "OpenAIEngine",
    "sagagraph.agents.paper": "Paper PaperTooShortError Section",
    "sagagraph.agents.paper_loader": "PaperLoader",
    "sagagraph.agents.paper_parsing": "check_paper load_paper",
    "sagagraph.agents.paper_saga": "PAPER_STEPS paper_saga_definition",
    "sagagraph.agents.schemas": "PartFound Review Summary ValidationReport",
    "sagagraph.agents.store": "OutputStore",
    "sagagraph.blackboard.board": "BoardEntry BoardState",
    "sagagraph.blackboard.builder": "build_blackboard_graph paper_blackboard_graph",
    "sagagraph.blackboard.refinement": "Refinement",
    "sagagraph.checkpoints.async_factory": "open_async_checkpointer",
    "sagagraph.checkpoints.factory": "open_checkpointer",
    "sagagraph.checkpoints.saga_index": "SagaSummary latest_checkpoints",
    "sagagraph.choreography": (
        "EventBus EventNames choreography_status derive_choreography open_bus "
        "register_event_names run_agent run_choreographed_saga saga_events "
        "start_choreographed_saga wait_for_sagas"
    ),
    "sagagraph.compare": "RouterRun compare_routers render_comparison",
    "sagagraph.compare_modes": "ModeRun compare_modes render_mode_comparison",
    "sagagraph.errors": (
        "AgentRunError BusError CompensatedKeyError CompensationFailedError "
        "ConfigurationError InjectedFailure InputError InvalidSagaIdError "
        "IrreversibleToolError MalformedModelOutput ModelCallError PaperLoadError "
        "SagaBusyError SagaGraphError SagaNotFoundError StepError StepTimeoutError "
        "ToolUndoError"
    ),
    "sagagraph.graph.async_runner": "aresume_saga arun_saga asaga_status",
    "sagagraph.graph.builder": "build_saga_graph",
    "sagagraph.graph.router_options": "RouterOptions",
    "sagagraph.graph.runner": "list_sagas resolve_saga resume_saga run_saga saga_config "
    "saga_status",
    "sagagraph.graph.state": "SagaState",
    "sagagraph.graph.submit": "SagaRequest submit_saga submit_sagas",
    "sagagraph.graph.unfinished": "open_sagas recover_saga recover_sagas rollback_saga "
    "unfinished_sagas waiting_sagas",
    "sagagraph.graph.worker": "WorkerTally arun_worker run_worker",
    "sagagraph.plotting": (
        "draw_choreography draw_saga_graph plot_board plot_saga_timeline plot_saga_timelines "
        "records_table"
    ),
    "sagagraph.saga.guard": "FINISH Accepted Rejected guard",
    "sagagraph.saga.ids": "new_saga_id validate_saga_id",
    "sagagraph.saga.protocol": "Participant Retry SagaDefinition Step StepContext StepResult "
    "Usage participant",
    "sagagraph.saga.view": "Event Status saga_view",
    "sagagraph.tools": (
        "AgentParticipant ToolCall ToolCompensationMiddleware agent_step compensable "
        "create_compensating_agent idempotency_key irreversible read_only"
    ),
}
"""Each module that defines public names, and those names (the TYPE_CHECKING imports above)."""

_LAZY = {name: module for module, names in _EXPORTS.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sagagraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next look-up is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(ModuleType):
    """``sagagraph`` itself. Importing a submodule binds it as an attribute of its package:
    ``sagagraph.compare_modes`` would then be the module, not the public function of that
    name. The function is bound instead, as when every name was imported eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _LAZY.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


# A library logs; the application decides where it goes (the CLI configures handlers).
logging.getLogger("sagagraph").addHandler(logging.NullHandler())

__all__ = [
    "FINISH",
    "PAPER_STEPS",
    "Accepted",
    "AgentParticipant",
    "AgentRunError",
    "BoardEntry",
    "BoardState",
    "BusError",
    "CompensatedKeyError",
    "CompensationFailedError",
    "ConfigurationError",
    "Event",
    "EventBus",
    "EventNames",
    "InjectedFailure",
    "InputError",
    "InvalidSagaIdError",
    "IrreversibleToolError",
    "MalformedModelOutput",
    "ModeRun",
    "ModelCallError",
    "OfflineEngine",
    "OpenAIEngine",
    "OutputStore",
    "Paper",
    "PaperEngine",
    "PaperLoadError",
    "PaperLoader",
    "PaperTooShortError",
    "PartFound",
    "Participant",
    "Refinement",
    "Rejected",
    "Retry",
    "Review",
    "RouterOptions",
    "RouterRun",
    "SagaBusyError",
    "SagaDefinition",
    "SagaGraphError",
    "SagaNotFoundError",
    "SagaRequest",
    "SagaState",
    "SagaSummary",
    "Section",
    "Status",
    "Step",
    "StepContext",
    "StepError",
    "StepResult",
    "StepTimeoutError",
    "Summary",
    "ToolCall",
    "ToolCompensationMiddleware",
    "ToolUndoError",
    "Usage",
    "ValidationReport",
    "WorkerTally",
    "__version__",
    "agent_step",
    "aresume_saga",
    "arun_saga",
    "arun_worker",
    "asaga_status",
    "build_blackboard_graph",
    "build_saga_graph",
    "check_paper",
    "choreography_status",
    "compare_modes",
    "compare_routers",
    "compensable",
    "create_compensating_agent",
    "derive_choreography",
    "draw_choreography",
    "draw_saga_graph",
    "guard",
    "idempotency_key",
    "irreversible",
    "latest_checkpoints",
    "list_sagas",
    "load_paper",
    "make_chat_model",
    "make_engine",
    "new_saga_id",
    "open_async_checkpointer",
    "open_bus",
    "open_checkpointer",
    "open_sagas",
    "paper_blackboard_graph",
    "paper_saga_definition",
    "participant",
    "plot_board",
    "plot_saga_timeline",
    "plot_saga_timelines",
    "read_only",
    "records_table",
    "recover_saga",
    "recover_sagas",
    "register_event_names",
    "render_comparison",
    "render_mode_comparison",
    "resolve_llm",
    "resolve_saga",
    "resume_saga",
    "rollback_saga",
    "run_agent",
    "run_choreographed_saga",
    "run_saga",
    "run_worker",
    "saga_config",
    "saga_events",
    "saga_status",
    "saga_view",
    "start_choreographed_saga",
    "submit_saga",
    "submit_sagas",
    "unfinished_sagas",
    "validate_saga_id",
    "wait_for_sagas",
    "waiting_sagas",
]
