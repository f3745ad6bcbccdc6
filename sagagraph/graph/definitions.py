"""The saga definitions a process can act on, each known by its reference ``module:factory``.

Reading a saga needs no definition (:mod:`sagagraph.service.reading`); driving it on (resume,
resolve, rollback, approve, recover, a worker's delivery) needs its steps. A factory is a
function from a saga's input to its :class:`~sagagraph.saga.protocol.SagaDefinition` (or an
uncompiled LangGraph ``StateGraph``); one that takes no argument is called without the input.
Nothing is pickled: a process acting on a saga needs the same code installed.

Which definition a saga belongs to: the reference it was submitted with
(``input["worker"]["app"]``), else the first known factory whose definition carries the
saga's recorded name (``saga``), else the default for sagas that record no name. A saga of a
definition this process does not know is refused in one line that names it, and is left as
it is.

A factory object may declare ``definition_name`` (its sagas are known without building it),
and may offer ``check_forward(saga_input)``: called before an operation that runs
steps forward, it refuses early what a step would only find out later (a missing model key).
"""

from __future__ import annotations

import importlib
import inspect
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sagagraph.errors import ConfigurationError, InputError
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.view import describe_error

SagaFactory = Callable[..., Any]
"""Given a saga's input (or nothing), its definition or uncompiled graph."""

WORKER_KEY = "worker"
"""The key of a saga's input under which ``submit`` records ``{"app": ..., "queue": ...}``."""
_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_reference(reference: str, source: str = "--app") -> str:
    """``reference`` when it reads ``module:factory``; ConfigurationError (one line) else."""
    if not _REFERENCE.match(reference):
        raise ConfigurationError(
            f"{source} {reference!r}: expected module:factory (a function from a saga's input "
            "to its SagaDefinition), e.g. examples.travel_booking.worker:travel_saga"
        )
    return reference


def load_factory(reference: str, source: str = "--app") -> SagaFactory:
    """Import the factory ``module:factory`` names; ConfigurationError (one line) when missing."""
    module_name, _, attribute = check_reference(reference, source).partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"{source} {reference!r}: {describe_error(error)}") from None
    if not callable(found):
        raise ConfigurationError(f"{source} {reference!r}: not a function")
    factory: SagaFactory = found
    return factory


def python_call(view: Mapping[str, Any], command: str) -> str:
    """The Python call that does what ``command`` would do to ``view``'s saga."""
    saga_id = view["saga_id"]
    if command in ("approve", "reject") or view.get("approvals"):
        return (
            f'approve_tool_call(app, "{saga_id}") or reject_tool_call(app, "{saga_id}", why) '
            "from sagagraph.graph"
        )
    if command == "resolve" or view.get("waiting_for_operator"):
        return f'resolve_saga(app, "{saga_id}", "retry") (or "skip", note=...)'
    if command == "resume":
        return f'resume_saga(app, "{saga_id}")'
    if command == "rollback":
        return f'rollback_saga(app, "{saga_id}", reason=..., by=...)'
    return f'recover_sagas(app) or resume_saga(app, "{saga_id}")'


def recorded_reference(saga_input: Mapping[str, Any]) -> str | None:
    """The reference a saga was submitted with; None when it records none."""
    recorded = saga_input.get(WORKER_KEY)
    app = recorded.get("app") if isinstance(recorded, Mapping) else None
    return str(app) if app else None


def takes_input(factory: SagaFactory) -> bool:
    """True unless ``factory`` is a function of no argument."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is not p.VAR_KEYWORD and p.default is p.empty for p in parameters) or any(
        p.kind is p.VAR_POSITIONAL for p in parameters
    )


def make(factory: SagaFactory, saga_input: Mapping[str, Any], reference: str) -> Any:
    """What ``factory`` returns for ``saga_input``: a SagaDefinition or a StateGraph."""
    from langgraph.graph import StateGraph  # loaded to build or act on a saga, not to read one

    made = factory(saga_input) if takes_input(factory) else factory()
    if not isinstance(made, (SagaDefinition, StateGraph)):
        raise ConfigurationError(
            f"{reference}: returned {type(made).__name__}, not a SagaDefinition or StateGraph"
        )
    return made


@dataclass
class Definitions:
    """The factories a process knows, by reference, and the one a saga recording no
    definition name belongs to (``default``)."""

    factories: dict[str, SagaFactory] = field(default_factory=dict)
    default: str | None = None
    _built: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(
        cls,
        references: Iterable[str] = (),
        own: Mapping[str, SagaFactory] | None = None,
        default: str | None = None,
    ) -> Definitions:
        """``own`` factories (given as objects) and those ``references`` name (imported now,
        so a wrong one fails at once, in one line)."""
        factories = dict(own or {})
        for reference in references:
            if reference not in factories:
                factories[reference] = load_factory(reference)
        return cls(factories, default)

    @property
    def references(self) -> frozenset[str]:
        return frozenset(self.factories)

    def reference_for(self, view: Mapping[str, Any], command: str) -> str:
        """The reference of the factory that builds ``view``'s saga; InputError (one line,
        naming the definition and how to act on it) when none does."""
        saga_input = view.get("input") or {}
        recorded = recorded_reference(saga_input)
        if recorded is not None:
            if recorded in self.factories:
                return recorded
            raise InputError(
                f"saga {view['saga_id']!r} runs {recorded}, which this process was not given: "
                f"{command} it with --app {recorded} (or SAGAGRAPH_APP={recorded})"
            )
        name = view.get("saga")
        for reference, factory in self.factories.items():
            declared = getattr(factory, "definition_name", None)
            if declared is not None:
                if declared == name:
                    return reference
                continue
            made = make(factory, saga_input, reference)
            if not isinstance(made, SagaDefinition) or name is None or made.name == name:
                return reference
        if name is None and self.default is not None:
            return self.default
        raise InputError(
            f"saga {view['saga_id']!r} belongs to definition {name!r}, which this process was "
            f"not given: give its factory with --app MODULE:FACTORY (or SAGAGRAPH_APP), or "
            f"from Python, on an app compiled from {name!r}, call {python_call(view, command)}"
        )

    def cannot_act(self, view: Mapping[str, Any], command: str) -> str | None:
        """Why this process cannot ``command`` ``view``'s saga (one line), or None."""
        try:
            self.reference_for(view, command)
        except InputError as error:
            return str(error)
        return None

    def graph_of(self, reference: str, saga_input: Mapping[str, Any]) -> Any:
        """The uncompiled graph ``reference``'s factory returns for ``saga_input`` (a
        definition's graph is built once per definition object)."""
        if reference not in self.factories:
            raise InputError(f"--app {reference!r}: not a definition this process was given")
        made = make(self.factories[reference], saga_input, reference)
        from langgraph.graph import StateGraph

        from sagagraph.graph.builder import build_saga_graph

        if isinstance(made, StateGraph):
            return made
        with self._lock:
            built = self._built.get(id(made))
            if built is None or built[0] is not made:
                built = self._built[id(made)] = (made, build_saga_graph(made))
            return built[1]

    def graph_for(self, view: Mapping[str, Any], command: str) -> Any:
        """The uncompiled graph of ``view``'s saga (InputError when no factory builds it)."""
        return self.graph_of(self.reference_for(view, command), view.get("input") or {})

    def check_forward(
        self, view: Mapping[str, Any], command: str, reference: str | None = None
    ) -> None:
        """Let the saga's factory refuse an operation that runs steps forward, before it
        starts (its ``check_forward``, when it has one)."""
        factory = self.factories[reference or self.reference_for(view, command)]
        check = getattr(factory, "check_forward", None)
        if callable(check):
            check(view.get("input") or {})


class CompiledSagas:
    """Sagas' graphs compiled on one checkpointer: each graph a factory returns is compiled
    once (a factory that returns the same graph for the same settings is compiled once)."""

    def __init__(self, checkpointer: Any, definitions: Definitions) -> None:
        self.checkpointer = checkpointer
        self.definitions = definitions
        self._compiled: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def app_for(self, view: Mapping[str, Any], command: str = "run") -> Any:
        """``view``'s saga graph, compiled; InputError when no known factory builds it."""
        made = self.definitions.graph_for(view, command)
        with self._lock:
            known = self._compiled.get(id(made))
            if known is None or known[0] is not made:
                known = self._compiled[id(made)] = (
                    made,
                    made.compile(checkpointer=self.checkpointer),
                )
            return known[1]
