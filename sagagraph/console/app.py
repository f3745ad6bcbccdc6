"""The console's web app: server-rendered pages over the checkpointer and the event log.

The pages (docs/console.md): the sagas (``/``) and the operator's queue (``/queue``), whose
tables refresh every few seconds (``?fragment=rows``); one saga (``/sagas/{id}``, with its
``timeline.svg`` and the ``stamp`` the page polls to reload when the saga moves); and
``POST /sagas/{id}/actions/{name}``, one of :data:`sagagraph.console.actions.ACTIONS`, checked
by :class:`sagagraph.console.security.Guard`. Every text a page shows passes
:func:`sagagraph.redaction.redact` (the templates' finalize hook), so no secret is rendered.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sagagraph.console.actions import (
    ACTIONS,
    ActionRequest,
    allowed_actions,
    check_request,
)
from sagagraph.console.security import SECURITY_HEADERS, Guard
from sagagraph.console.source import QUEUE_REASONS, SagaSource, matches
from sagagraph.console.timeline import timeline_svg
from sagagraph.errors import SagaGraphError
from sagagraph.redaction import redact
from sagagraph.saga.view import Status, describe_error, format_duration

STATIC = Path(__file__).with_name("static")
REFRESH_SECONDS = 3
"""How often a page polls for changes."""
MAX_ROWS = 500
"""Rows a list shows at most (the latest updated): filter or search for older sagas."""
MAX_OUTPUT_CHARS = 20_000
"""How much of an output file the saga page shows."""
SAGA_STATUSES: tuple[str, ...] = get_args(Status)
"""A saga's own statuses: each saga has exactly one."""
STATUSES: tuple[str, ...] = (*SAGA_STATUSES, *QUEUE_REASONS)
"""What the status filter offers: the statuses, then the queue's reasons."""


_redacted: ContextVar[dict[str, str] | None] = ContextVar("redacted", default=None)
"""The texts one page has already redacted: a list repeats the same paths and reasons."""


def hide_secrets(value: Any) -> Any:
    """The templates' finalize hook: every text rendered, secrets hidden."""
    if isinstance(value, Markup):  # built markup (JSON, the timeline): masked all the same
        return Markup(redact(str(value)))
    if not isinstance(value, str):
        return value
    seen = _redacted.get()
    if seen is None:
        return redact(value)
    hidden = seen.get(value)
    if hidden is None:
        hidden = seen[value] = redact(value)
    return hidden


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("sagagraph.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=hide_secrets,
    )
    env.globals["refresh_ms"] = REFRESH_SECONDS * 1000
    env.filters["when"] = when
    env.filters["file_name"] = file_name
    env.filters["clip"] = clip
    env.filters["duration"] = format_duration
    return env


def when(ts: str | None) -> str:
    """An event's timestamp as a person reads it: ``2026-12-05 06:50:11``."""
    return ts.replace("T", " ")[:19] if ts else "-"


def file_name(path: str | None) -> str:
    """The last part of a path (the full path goes in the cell's tooltip)."""
    return Path(path).name if path else "-"


def clip(text: str | None, width: int = 120) -> str:
    """``text`` on one line, at most ``width`` characters."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def status_counts(
    rows: list[dict[str, Any]], kinds: tuple[str, ...] = STATUSES
) -> list[tuple[str, int]]:
    """How many sagas match each of ``kinds`` (statuses, or queue reasons), in that order.

    The statuses partition the sagas, so their counts sum to the sagas listed; the queue's
    reasons are flags over them (an orphan is also ``running``), counted apart."""
    counts = {s: sum(1 for r in rows if matches(r, s, None)) for s in kinds}
    return [(s, n) for s, n in counts.items() if n]


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response and refuses a foreign ``Host``."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
        if not self.guard.host_ok(host):
            # A page of another site whose name resolves here (DNS rebinding) reads nothing.
            refused = PlainTextResponse(
                f"Host {host!r} is not this console\n",
                status_code=421,
                headers={"X-Content-Type-Options": "nosniff"},
            )
            await refused(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class Console:
    """The pages and actions over one :class:`SagaSource`, guarded by one :class:`Guard`."""

    def __init__(self, source: SagaSource, guard: Guard) -> None:
        self.source = source
        self.guard = guard
        self.env = environment()

    def render(self, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("csrf", self.guard.csrf)
        context.setdefault("needs_token", self.guard.token is not None)
        page = _redacted.set({})  # one page's cache: the secrets may change between pages
        try:
            html = self.env.get_template(template).render(**context)
        finally:
            _redacted.reset(page)
        return HTMLResponse(html, status_code=status_code)

    def sagas(self, request: Request) -> Response:
        status = request.query_params.get("status") or None
        text = request.query_params.get("q") or None
        every = self.source.rows()
        found = [r for r in every if matches(r, status, text)]
        rows = found[:MAX_ROWS]
        template = "rows.html" if request.query_params.get("fragment") == "rows" else "list.html"
        return self.render(
            template,
            rows=rows,
            total=len(every),
            found=len(found),
            counts=status_counts(every, SAGA_STATUSES),
            flag_counts=status_counts(every, tuple(QUEUE_REASONS)),
            status=status,
            q=text or "",
            statuses=STATUSES,
            page="list",
        )

    def queue(self, request: Request) -> Response:
        rows = self.source.queue()
        template = "rows.html" if request.query_params.get("fragment") == "rows" else "queue.html"
        return self.render(template, rows=rows, reasons=QUEUE_REASONS, page="queue")

    def saga(self, request: Request) -> Response:
        saga_id = request.path_params["saga_id"]
        view = self.source.view(saga_id)
        if view is None:
            return self.render("missing.html", status_code=404, saga_id=saga_id, page="saga")
        return self.saga_page(view, done=request.query_params.get("done"))

    def saga_page(
        self,
        view: Mapping[str, Any],
        *,
        done: str | None = None,
        error: str | None = None,
        status_code: int = 200,
        who: str | None = None,
        why: str = "",
    ) -> HTMLResponse:
        return self.render(
            "saga.html",
            status_code=status_code,
            view=view,
            timeline=Markup(timeline_svg(view)),
            outputs=output_texts(view),
            actions=allowed_actions(view, self.source),
            done=ACTIONS.get(done or ""),
            error=error,
            who=who or default_operator(),
            why=why,
            page="saga",
        )

    def timeline(self, request: Request) -> Response:
        view = self.source.view(request.path_params["saga_id"])
        if view is None:
            return PlainTextResponse("no such saga\n", status_code=404)
        return Response(timeline_svg(view), media_type="image/svg+xml")

    def stamp(self, request: Request) -> Response:
        view = self.source.view(request.path_params["saga_id"])
        if view is None:
            return JSONResponse({"found": False}, status_code=404)
        return JSONResponse(
            {
                "found": True,
                "status": view["status"],
                "events": len(view.get("events") or []),
                "waiting_for_operator": bool(view.get("waiting_for_operator")),
            }
        )

    async def act(self, request: Request) -> Response:
        saga_id, name = request.path_params["saga_id"], request.path_params["name"]
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        refusal = self.guard.refusal(request.headers, form)
        if refusal is not None:
            return PlainTextResponse(refusal + "\n", status_code=403)
        client = request.client.host if request.client else None
        return await run_in_threadpool(self.act_now, saga_id, name, form, client)

    def act_now(
        self, saga_id: str, name: str, form: Mapping[str, str], client: str | None = None
    ) -> Response:
        """Runs the action (in a worker thread: the engine's calls block)."""
        view = self.source.view(saga_id)
        if view is None:
            return self.render("missing.html", status_code=404, saga_id=saga_id, page="saga")
        action = ACTIONS.get(name)
        who, why = form.get("who", ""), form.get("why", "")
        if action is None or not action.allowed(view, self.source):
            problem = f"{name}: not allowed for this saga now (status {view['status']})"
            return self.saga_page(view, error=problem, status_code=409, who=who, why=why)
        try:
            who, why = check_request(who, why)
            action.run(ActionRequest(self.source, view, who, why, client))
        except SagaGraphError as failure:
            after = self.source.view(saga_id) or view
            return self.saga_page(
                after, error=redact(str(failure)), status_code=409, who=who, why=why
            )
        except Exception as failure:  # one line on the page, as the CLI prints it
            after = self.source.view(saga_id) or view
            return self.saga_page(
                after, error=describe_error(failure), status_code=500, who=who, why=why
            )
        return RedirectResponse(f"/sagas/{saga_id}?done={name}", status_code=303)

    async def failed(self, request: Request, error: Exception) -> Response:
        """Any error reading the stores (a database down, a file unreadable): one line."""
        problem = redact(str(error)) if isinstance(error, SagaGraphError) else None
        return self.render(
            "failed.html", status_code=500, problem=problem or describe_error(error), page=""
        )


def default_operator() -> str:
    """Who the "who" field proposes: the account the console runs as."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def saga_folder(view: Mapping[str, Any]) -> Path | None:
    """The saga's own outputs folder, ``<recorded outputs folder>/<saga id>``, symlinks
    resolved; None when the saga records no outputs folder."""
    saga_input = view.get("input")
    settings = saga_input.get("settings") if isinstance(saga_input, Mapping) else None
    outputs = settings.get("outputs") if isinstance(settings, Mapping) else None
    saga_id = view.get("saga_id")
    if not isinstance(outputs, str) or not outputs or not isinstance(saga_id, str):
        return None
    return Path(os.path.realpath(Path(outputs) / saga_id))


def output_texts(view: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each output file of the saga with the start of its text (secrets hidden by the page).

    Only a file in the saga's own outputs folder (:func:`saga_folder`) is read: an event log
    anyone can write to may name any file as an output, and the page must not print it."""
    shown = []
    folder = saga_folder(view)
    for step, path in (view.get("outputs") or {}).items():
        real = Path(os.path.realpath(str(path)))
        if folder is None or real.parent != folder:
            body = "(not shown: outside the saga's outputs folder)"
            shown.append({"step": str(step), "path": str(path), "text": body})
            continue
        try:
            with open(real, encoding="utf-8", errors="replace") as file:
                body = file.read(MAX_OUTPUT_CHARS + 1)
        except OSError as error:
            body = f"(not readable here: {type(error).__name__})"
        if len(body) > MAX_OUTPUT_CHARS:
            body = body[:MAX_OUTPUT_CHARS] + "\n..."
        shown.append({"step": str(step), "path": str(path), "text": body})
    return shown


def create_app(source: SagaSource, guard: Guard) -> ASGIApp:
    """The console's ASGI app over ``source``, guarded by ``guard``."""
    console = Console(source, guard)
    app = Starlette(
        routes=[
            Route("/", console.sagas),
            Route("/queue", console.queue),
            Route("/sagas/{saga_id}", console.saga),
            Route("/sagas/{saga_id}/timeline.svg", console.timeline),
            Route("/sagas/{saga_id}/stamp", console.stamp),
            Route("/sagas/{saga_id}/actions/{name}", console.act, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={Exception: console.failed},
    )
    return SecurityHeaders(app, guard)
