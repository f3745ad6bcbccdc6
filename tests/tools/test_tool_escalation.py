"""An agent step's compensation escalates like any other: an irreversible call that ran, or an
undo that still fails after the step's compensation retry policy, waits for an operator."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool

from sagagraph import (
    Retry,
    SagaDefinition,
    StepContext,
    StepResult,
    agent_step,
    build_saga_graph,
    compensable,
    idempotency_key,
    irreversible,
    open_checkpointer,
    participant,
    resolve_saga,
    run_saga,
)
from sagagraph.tools import ToolCall


class PlanModel(BaseChatModel):
    """Unit-test model: each agent (named by its system prompt) calls its planned tools in
    order, one per turn, then answers."""

    plans: dict[str, list[tuple[str, dict[str, Any]]]]

    @property
    def _llm_type(self) -> str:
        return "plan"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = next(str(m.content) for m in messages if isinstance(m, SystemMessage))
        done = sum(isinstance(m, ToolMessage) for m in messages)
        plan = self.plans[system]
        if done < len(plan):
            name, args = plan[done]
            reply = AIMessage(
                content="", tool_calls=[{"name": name, "args": args, "id": f"{system}{done}"}]
            )
        else:
            reply = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Ledger:
    """A partner that books under keys and cancels them; ``broken`` cancels fail first."""

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.cancels: list[str] = []
        self.failures_left = 0

    def cancel(self, call: ToolCall) -> None:
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("partner unreachable")
        if call["key"] in self.live:
            self.live.discard(call["key"])
            self.cancels.append(call["key"])


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


def tools_for(ledger: Ledger) -> tuple[Any, Any]:
    @tool
    def book(item: str) -> str:
        """Book ``item``."""
        ledger.live.add(idempotency_key())
        return "booked"

    @tool
    def send_sms(text: str) -> str:
        """Text the traveller (cannot be taken back)."""
        return "sent"

    return compensable(book, undo=ledger.cancel), irreversible(send_sms)


def fail(ctx: StepContext) -> StepResult:
    raise RuntimeError("INSUFFICIENT_FUNDS")


@pytest.fixture
def app(tmp_path: Path, ledger: Ledger) -> Iterator[Any]:
    book, send_sms = tools_for(ledger)
    model = PlanModel(
        plans={
            "flight": [("book", {"item": "seat"}), ("book", {"item": "lounge"})],
            "notify": [("send_sms", {"text": "your trip is booked"})],
        }
    )
    undo_retry = Retry(max_attempts=3, backoff=0)
    definition = SagaDefinition.of(
        "trip",
        [
            agent_step(
                "flight",
                model,
                [book],
                prompt=lambda c: "book",
                system_prompt="flight",
                undo_retry=undo_retry,
            ),
            agent_step(
                "notify", model, [send_sms], prompt=lambda c: "tell", system_prompt="notify"
            ),
            participant("billing", fail),
        ],
    )
    with open_checkpointer(f"sqlite:///{tmp_path / 's.sqlite'}") as checkpointer:
        yield build_saga_graph(definition).compile(checkpointer=checkpointer)


def undo_events(view: dict[str, Any], step: str) -> list[tuple[str, str, int]]:
    return [
        (e["key"].rsplit(":", 1)[1], e["outcome"], e["attempt"])
        for e in view["events"]
        if e["action"] == "tool_undo" and e["step"] == step
    ]


def test_an_irreversible_call_that_ran_escalates_instead_of_pretending(
    app: Any, ledger: Ledger
) -> None:
    view = run_saga(app, {}, saga_id="irr-1")

    assert view["status"] == "compensation_failed"
    failure = view["compensation_failure"]
    assert failure["step"] == "notify"
    assert "IrreversibleToolError" in failure["error"] and "irr-1:notify:call-1" in failure["error"]
    assert failure["attempts"] == 1  # no retry can take a text message back
    assert view["tools"]["notify"] == [
        {"tool": "send_sms", "key": "irr-1:notify:call-1", "status": "not_undone"}
    ]
    assert len(ledger.live) == 2  # the flight is not undone before the operator decides

    resolved = resolve_saga(app, "irr-1", "skip", note="ops: the text stays sent")

    assert resolved["status"] == "resolved_by_operator"
    assert ledger.cancels == ["irr-1:flight:call-2", "irr-1:flight:call-1"]
    assert ledger.live == set()


def test_a_failing_undo_is_retried_by_the_steps_compensation_policy(
    app: Any, ledger: Ledger
) -> None:
    ledger.failures_left = 2
    view = run_saga(app, {}, saga_id="retry-1")

    # notify escalates first (irreversible); skip it so the flight's undos run.
    view = resolve_saga(app, "retry-1", "skip", note="ops: the text stays sent")

    assert view["status"] == "resolved_by_operator"
    assert undo_events(view, "flight") == [
        ("call-2", "retry", 1),
        ("call-2", "retry", 2),
        ("call-2", "ok", 3),
        ("call-1", "ok", 1),
    ]
    assert ledger.cancels == ["retry-1:flight:call-2", "retry-1:flight:call-1"]


def test_an_undo_that_keeps_failing_escalates_and_a_retry_undoes_only_what_is_left(
    app: Any, ledger: Ledger
) -> None:
    run_saga(app, {}, saga_id="stuck-1")
    ledger.failures_left = 4  # call-2: 3 attempts fail; call-1: 1 fails, 2nd works

    view = resolve_saga(app, "stuck-1", "skip", note="ops: the text stays sent")

    assert view["status"] == "compensation_failed"
    assert view["compensation_failure"]["step"] == "flight"
    assert "ToolUndoError" in view["compensation_failure"]["error"]
    assert "stuck-1:flight:call-2" in view["compensation_failure"]["error"]
    assert ledger.cancels == ["stuck-1:flight:call-1"]  # what could be undone was
    assert {c["key"]: c["status"] for c in view["tools"]["flight"]} == {
        "stuck-1:flight:call-1": "undone",
        "stuck-1:flight:call-2": "not_undone",
    }

    view = resolve_saga(app, "stuck-1", "retry")

    assert view["status"] == "resolved_by_operator"
    assert ledger.cancels == ["stuck-1:flight:call-1", "stuck-1:flight:call-2"]
    # The retry undid call-2 only: call-1's undo is in the checkpointed trail.
    assert [k for k, o, _ in undo_events(view, "flight") if o == "ok"] == ["call-1", "call-2"]
