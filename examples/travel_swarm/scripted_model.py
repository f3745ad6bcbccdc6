"""An offline chat model that plays the swarm's agents and its router (no network, no key).

It answers from :mod:`examples.travel_swarm.script`; ``bind_tools`` returns the model itself,
as ``create_agent`` needs. The router asks it in plain text (``RouterOptions(method="text")``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from examples.travel_swarm.script import ROUTER_PREFIX, decide, route


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


class ScriptedSwarmModel(BaseChatModel):
    """The swarm's scripted LLM."""

    @property
    def _llm_type(self) -> str:
        return "scripted-swarm"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        if system.startswith(ROUTER_PREFIX):
            reply = AIMessage(content=route(_text(messages[-1])))
        else:
            task = next(_text(m) for m in messages if isinstance(m, HumanMessage))
            results = [_text(m) for m in messages if isinstance(m, ToolMessage)]
            decision = decide(system, task, results)
            calls = [
                {
                    "name": name,
                    "args": args,
                    "id": f"call_{uuid.uuid4().hex[:8]}",
                    "type": "tool_call",
                }
                for name, args in decision.calls
            ]
            reply = AIMessage(content=decision.answer, tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])
