"""The travel swarm over the real ChatOpenAI client: a scripted OpenAI-compatible responder.

The server (:mod:`tests.support.openai_server`) answers each chat-completions request with the reply
:mod:`examples.travel_swarm.script` decides from the request body: an agent's tool calls (as
OpenAI ``tool_calls``), its final answer, or the router's proposal in the structured form the
request asked for. ``ChatOpenAI`` sends the tool results back as ``role: tool`` messages, as it
would to OpenAI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from examples.travel_swarm.partners import TravelStores, open_partners
from examples.travel_swarm.script import ROUTER_PREFIX, decide, route
from examples.travel_swarm.supervisor import swarm_graph
from sagagraph import open_checkpointer
from tests.support.openai_server import Reply, ScriptedOpenAIServer, structured


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


@dataclass
class SwarmResponder:
    """Plays the agents and the router; ``fail_next`` answers that many requests with a 500."""

    fail_next: int = 0
    agent_requests: list[str] = field(default_factory=list)
    """The role of each agent request, in order (``flight agent``...)."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        if self.fail_next:
            self.fail_next -= 1
            return Reply(status=500, content="scripted outage")
        messages = request["messages"]
        system = next((_text(m) for m in messages if m["role"] == "system"), "")
        if system.startswith(ROUTER_PREFIX):
            return structured(request, json.loads(route(_text(messages[-1]))))
        self.agent_requests.append(system.split(":", 1)[0])
        task = next(_text(m) for m in messages if m["role"] == "user")
        results = [_text(m) for m in messages if m["role"] == "tool"]
        decision = decide(system, task, results)
        if decision.calls:
            calls = [{"name": n, "arguments": json.dumps(a)} for n, a in decision.calls]
            return Reply(tool_calls=calls)
        return Reply(content=decision.answer)


def chat_model(server: ScriptedOpenAIServer) -> ChatOpenAI:
    """The real client, pointed at the scripted server."""
    return ChatOpenAI(
        model="gpt-test", base_url=server.base_url, api_key=SecretStr("sk-test"), max_retries=0
    )


@contextmanager
def swarm_app(
    folder: Path, checkpointer_url: str, model: Any, router: str = "deterministic"
) -> Iterator[tuple[Any, TravelStores]]:
    """The compiled swarm over fresh partners under ``folder``."""
    stores = open_partners(folder)
    with open_checkpointer(checkpointer_url) as checkpointer:
        # The router asks ChatOpenAI in its default structured form (json_schema).
        graph = swarm_graph(stores, model, router)  # type: ignore[arg-type]
        yield graph.compile(checkpointer=checkpointer), stores


def forward_keys(view: dict[str, Any]) -> list[str]:
    """Keys of the calls that took effect (``tool_call ok``), in the order they were made."""
    return [e["key"] for e in view["events"] if e["action"] == "tool_call" and e["outcome"] == "ok"]


def undo_keys(view: dict[str, Any]) -> list[str]:
    """Keys of the undos that ran (``tool_undo ok``), in the order they ran."""
    return [e["key"] for e in view["events"] if e["action"] == "tool_undo" and e["outcome"] == "ok"]
