"""A local OpenAI-compatible chat server with scripted replies, for tests and benchmarks.

The real ``ChatOpenAI`` client talks to it over real HTTP on 127.0.0.1. A *responder* decides
each reply from the request body; :func:`structured` answers a structured-output request in the
form the client asked for (``response_format`` json_schema / json_object, or ``tools``).

    with ScriptedOpenAIServer(lambda req: structured(req, {"next_step": "reviewer"})) as server:
        model = ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key="sk-test",
                           max_retries=0)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply of the chat-completions endpoint."""

    content: str | None = None
    """Assistant message content (JSON text for json_schema structured output)."""
    tool_calls: list[dict[str, str]] | None = None
    """``[{"name": ..., "arguments": "<json>"}]`` for function calling."""
    status: int = 200
    """HTTP status; non-200 sends ``{"error": {...}}``."""
    delay: float = 0.0
    """Seconds to wait before answering (simulated model latency or a hang)."""


Responder = Callable[[dict[str, Any]], "Reply | str"]


def estimate_tokens(text: str) -> int:
    """A stable token estimate (about 4 characters a token), like a provider's usage."""
    return max(1, len(text) // 4) if text else 0


def request_text(request: dict[str, Any]) -> str:
    """All message text of a request, concatenated."""
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return "\n".join(parts)


def structured(request: dict[str, Any], obj: Any) -> Reply:
    """Answer with ``obj`` in the structured-output form the request asked for."""
    text = obj if isinstance(obj, str) else json.dumps(obj)
    tools = request.get("tools")
    if tools:
        name = tools[0]["function"]["name"]
        choice = request.get("tool_choice")
        if isinstance(choice, dict):
            name = choice.get("function", {}).get("name", name)
        return Reply(tool_calls=[{"name": name, "arguments": text}])
    return Reply(content=text)


def wants_schema(request: dict[str, Any]) -> str | None:
    """Name of the schema (response_format or tool) a request asks for, if any."""
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return str(fmt["json_schema"].get("name"))
    tools = request.get("tools")
    if tools:
        return str(tools[0]["function"]["name"])
    return None


OVERFLOW_STYLES = ("openai", "llama.cpp")
"""How a server words a refusal of a request longer than its context: OpenAI's (and vLLM's)
``context_length_exceeded`` naming the window, or llama.cpp's ``exceed_context_size_error``."""


def overflow_body(style: str, limit: int, prompt: int) -> dict[str, Any]:
    """The HTTP 400 body a server of ``style`` sends for a ``prompt``-token request."""
    if style == "llama.cpp":
        return {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": limit,
            }
        }
    return {
        "error": {
            "message": f"This model's maximum context length is {limit} tokens. However, your "
            f"messages resulted in {prompt} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


@dataclass
class ScriptedOpenAIServer:
    """``POST /v1/chat/completions`` on 127.0.0.1, answered by ``responder``.

    With ``max_prompt_tokens`` it refuses a longer request with HTTP 400, as a model server
    with that context window does (``overflow_style`` words the refusal), before the responder
    sees it.
    """

    responder: Responder
    model: str = "gpt-test"
    max_prompt_tokens: int | None = None
    """The context window: a request with more prompt tokens is refused (None: no limit)."""
    overflow_style: str = "openai"
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request body received, in order (refused ones included)."""
    refused: int = 0
    """Requests refused as longer than ``max_prompt_tokens``."""
    prompt_tokens: int = 0
    """Input tokens counted over all requests."""
    completion_tokens: int = 0
    """Output tokens counted over all replies."""
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, payload = owner.handle(body)
                self._send(status, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # The client may have given up (its timeout): nothing left to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval makes stop() quick; tests start and stop many servers.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def handle(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
        prompt = estimate_tokens(request_text(request))
        if self.max_prompt_tokens is not None and prompt > self.max_prompt_tokens:
            with self._lock:
                self.refused += 1
            return 400, overflow_body(self.overflow_style, self.max_prompt_tokens, prompt)
        reply = self.responder(request)
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            return reply.status, {"error": {"message": reply.content or "scripted error"}}
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        out_text = reply.content or ""
        if reply.tool_calls:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:8]}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in reply.tool_calls
            ]
            out_text = "".join(c["arguments"] for c in reply.tool_calls)
        completion = estimate_tokens(out_text)
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def serve(responder: Responder) -> Iterator[ScriptedOpenAIServer]:
    """Generator for a pytest fixture: a started server, stopped afterwards."""
    with ScriptedOpenAIServer(responder) as server:
        yield server


def quoted(point: str, quote: str, page: int = 1) -> dict[str, Any]:
    """One point of a scripted ``QuotedReview``: the remark, its verbatim quote and page."""
    return {"point": point, "page": page, "quote": quote}


SAMPLE_REVIEW: dict[str, Any] = {
    "strengths": [
        quoted(
            "Section 3 Method states the compensation contract clearly.",
            "Each agent commits a local transaction and registers a compensating action that "
            "undoes it",
        )
    ],
    "weaknesses": [
        quoted(
            "Section 4 Experiments does not report variance over the runs.",
            "added a median overhead of 11 milliseconds per step",
        )
    ],
    "suggestions": [
        quoted(
            "Compare against the plain retry the introduction dismisses.",
            "The usual response is to retry the failed call.",
        )
    ],
}
"""A scripted model's review of ``examples/papers/complete_paper.md``: every quote is printed
in it, so the quote check keeps every point."""
