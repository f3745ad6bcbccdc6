"""The paper saga as an application the surfaces run: its settings and its factory.

:class:`PaperSettings` is what a paper saga records of how it runs (outputs folder, engine,
model, parallel steps, mode, pipeline, router), from flags first, then the environment. The
API key stays in the environment (``OPENAI_API_KEY``), read when a client is made: it never
enters a saga's state or events.

:class:`PaperApp` is the paper saga's factory (``module:factory``, :data:`PAPER_APP`): given
a saga's input it returns the graph that carries the saga, built from the settings the saga
recorded (flags given now win where they may). Its engine is built on the first forward
step, so rolling a saga back needs no model key; :meth:`PaperApp.check_forward` refuses a
forward run without one before anything runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sagagraph.agents.paper_saga import PAPER_SAGA, paper_saga_definition
from sagagraph.agents.store import same_outputs_root
from sagagraph.errors import ConfigurationError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.protocol import SagaDefinition, Usage

if TYPE_CHECKING:
    from sagagraph.agents.engine import PaperEngine, Review, Summary, ValidationReport
    from sagagraph.agents.paper import Paper
    from sagagraph.agents.pdf.loader import PaperLoader

PAPER_APP = "sagagraph.agents.paper_app:paper_saga"
"""The reference of the paper saga's factory: the default of ``submit``, ``worker`` and
every command that acts on a saga."""
DEFAULT_OUTPUTS = "outputs"
BLACKBOARD = "blackboard"


def seconds(value: float | str | None, source: str) -> float | None:
    """A positive number of seconds from a flag or variable; None when unset or empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except ValueError:
        raise ConfigurationError(f"{source}={value!r}: expected seconds, e.g. 30") from None
    if not number > 0 or number == float("inf"):
        raise ConfigurationError(f"{source}={value!r}: expected a positive number of seconds")
    return number


@dataclass(frozen=True)
class PaperSettings:
    """How a paper saga runs; recorded in its input so any process carries it on the same way."""

    outputs: str = DEFAULT_OUTPUTS
    """Folder under which each saga writes ``<saga_id>/...`` (``SAGAGRAPH_OUTPUTS``)."""
    llm: str | None = None
    """``offline`` or ``openai`` (``SAGAGRAPH_LLM``); None: decided by whether a key is set."""
    model: str | None = None
    """Chat model name (``SAGAGRAPH_MODEL``)."""
    parallel: bool = False
    """The reviewer and the summarizer side by side after the validator (``--parallel``)."""
    step_timeout: float | None = None
    """Seconds each step may take (``--step-timeout``, ``SAGAGRAPH_STEP_TIMEOUT``)."""
    mode: str = "orchestration"
    """``orchestration`` or ``blackboard``: which graph runs (and resumes) the saga."""
    pipeline: str = "default"
    """``default`` (validator, reviewer, summarizer) or ``adaptive``."""
    router: str = "deterministic"
    """``deterministic`` or ``llm``: who picks the next step."""

    @classmethod
    def resolve(
        cls,
        *,
        outputs: str | None = None,
        llm: str | None = None,
        model: str | None = None,
        parallel: bool | None = None,
        step_timeout: float | str | None = None,
        mode: str | None = None,
        pipeline: str | None = None,
        router: str | None = None,
    ) -> PaperSettings:
        """Flags given, else the environment, else the defaults."""
        env = os.environ
        if step_timeout is not None:
            timeout = seconds(step_timeout, "--step-timeout")
        else:
            timeout = seconds(env.get("SAGAGRAPH_STEP_TIMEOUT"), "SAGAGRAPH_STEP_TIMEOUT")
        return cls(
            outputs=outputs or env.get("SAGAGRAPH_OUTPUTS") or DEFAULT_OUTPUTS,
            llm=llm or env.get("SAGAGRAPH_LLM") or None,
            model=model or env.get("SAGAGRAPH_MODEL") or None,
            parallel=bool(parallel),
            step_timeout=timeout,
            mode=mode or "orchestration",
            pipeline=pipeline or "default",
            router=router or "deterministic",
        )

    def recorded(self) -> dict[str, Any]:
        """What a saga records of its settings (``input["settings"]``)."""
        return {
            "outputs": self.outputs,
            "llm": self.llm,
            "model": self.model,
            "parallel": self.parallel,
            "step_timeout": self.step_timeout,
            "mode": self.mode,
            "pipeline": self.pipeline,
            "router": self.router,
        }


@dataclass(frozen=True)
class Overrides:
    """What flags given now change in a saga's recorded settings: the engine, the model, the
    step timeout, and the outputs folder where the recorded one is the same folder."""

    outputs: str | None = None
    llm: str | None = None
    model: str | None = None
    step_timeout: float | str | None = None


def settings_of(saga_input: Mapping[str, Any], overrides: Overrides = Overrides()) -> PaperSettings:
    """The settings ``saga_input`` recorded, with ``overrides`` applied."""
    recorded = saga_input.get("settings") or {}
    outputs = overrides.outputs
    if recorded.get("outputs"):
        # The folder the saga started with, whatever the working directory is now.
        outputs = same_outputs_root(str(recorded["outputs"]), outputs)
    return PaperSettings.resolve(
        outputs=outputs,
        llm=overrides.llm or recorded.get("llm"),
        model=overrides.model or recorded.get("model"),
        parallel=bool(recorded.get("parallel")),
        step_timeout=overrides.step_timeout or recorded.get("step_timeout"),
        mode=recorded.get("mode"),
        pipeline=recorded.get("pipeline"),
        router=recorded.get("router"),
    )


class DeferredEngine:
    """The engine :func:`~sagagraph.agents.models.make_engine` builds for ``llm`` and
    ``model``, built on the first ``validate``, ``review`` or ``summarize``: compensating
    the paper saga deletes files and never asks the model, so rolling back needs no key.
    ``name`` is known at once (it chooses the steps' retry policy) and needs no key."""

    def __init__(self, llm: str | None, model: str | None) -> None:
        from sagagraph.agents.models import resolve_llm

        self.name: str = resolve_llm(llm)
        self._llm = llm
        self._model = model
        self._engine: PaperEngine | None = None
        self._lock = threading.Lock()

    def built(self) -> PaperEngine:
        with self._lock:
            if self._engine is None:
                from sagagraph.agents.models import make_engine

                self._engine = make_engine(self._llm, self._model)
            return self._engine

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        return self.built().validate(paper)

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        return self.built().review(paper)

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        return self.built().summarize(paper, words)


class MissingRouterModel(ConfigurationError):
    """The LLM router has no chat model configured."""


def router_model(settings: PaperSettings) -> Any:
    """The LLM router's chat model; MissingRouterModel (one line) without a key."""
    from sagagraph.agents.models import make_chat_model

    try:
        return make_chat_model(settings.model)
    except ConfigurationError:
        raise MissingRouterModel(
            "--router llm needs a chat model: set OPENAI_API_KEY (any value for a local "
            "server, with OPENAI_BASE_URL), or use --router deterministic"
        ) from None


@dataclass
class PaperApp:
    """The paper saga's factory: a saga's input -> the uncompiled graph that carries it.

    One graph is built per set of settings and kept. ``loader`` reads the papers (a
    password-protected PDF's loader carries its password); ``router_options`` configure the
    LLM router; ``hooks`` observe every run of the graphs built here.
    """

    overrides: Overrides = Overrides()
    loader: PaperLoader | None = None
    router_options: Any = None
    hooks: SagaHooks | None = None
    definition_name: str = PAPER_SAGA
    _graphs: dict[PaperSettings, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def settings(self, saga_input: Mapping[str, Any]) -> PaperSettings:
        return settings_of(saga_input, self.overrides)

    def definition(self, settings: PaperSettings) -> SagaDefinition[Any]:
        """The paper saga's definition for ``settings`` (its engine built when first asked)."""
        from sagagraph.agents.pdf.loader import PaperLoader

        return paper_saga_definition(
            engine=DeferredEngine(settings.llm, settings.model),
            outputs_dir=settings.outputs,
            loader=self.loader if self.loader is not None else PaperLoader(),
            parallel=settings.parallel,
            step_timeout=settings.step_timeout,
            pipeline=settings.pipeline,
        )

    def __call__(self, saga_input: Mapping[str, Any]) -> Any:
        settings = self.settings(saga_input)
        with self._lock:
            if settings not in self._graphs:
                self._graphs[settings] = self.graph(settings)
            return self._graphs[settings]

    def graph(self, settings: PaperSettings) -> Any:
        """The uncompiled graph of ``settings``: orchestration or blackboard, deterministic
        or LLM-routed."""
        definition = self.definition(settings)
        options: dict[str, Any] = {"hooks": self.hooks}
        if settings.router == "llm":
            try:
                model = router_model(settings)
            except MissingRouterModel:
                # Reading or compensating asks no router: check_forward refuses the rest.
                model = "no-router-model"
            options |= {"router": "llm", "router_model": model}
            if self.router_options is not None:
                options["router_options"] = self.router_options
        if settings.mode == BLACKBOARD:
            from sagagraph.agents.paper_blackboard import paper_blackboard_graph

            return paper_blackboard_graph(definition, **options)
        from sagagraph.graph.builder import build_saga_graph

        return build_saga_graph(definition, **options)

    def check_forward(self, saga_input: Mapping[str, Any]) -> None:
        """ConfigurationError (one line) when a step run forward could not ask its model:
        refused before anything runs, instead of failing a step and rolling the saga back."""
        from sagagraph.agents.models import make_engine

        settings = self.settings(saga_input)
        make_engine(settings.llm, settings.model)
        if settings.router == "llm":
            router_model(settings)

    def with_(self, **changes: Any) -> PaperApp:
        """A copy with ``changes`` (its graphs built anew)."""
        return replace(self, **changes, _graphs={}, _lock=threading.Lock())


paper_saga = PaperApp()
"""The paper saga's factory with the recorded settings as they are (:data:`PAPER_APP`)."""
