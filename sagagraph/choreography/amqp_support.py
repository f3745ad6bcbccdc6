"""What the RabbitMQ bus needs around it: URL checks, sync calls of async code, and reading
the event log stream from its start."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Collection
from contextlib import suppress
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aio_pika
from aio_pika.abc import AbstractConnection, AbstractIncomingMessage
from aio_pika.exceptions import CONNECTION_EXCEPTIONS, ChannelNotFoundEntity

from sagagraph.checkpoints.urls import redact_url
from sagagraph.choreography.bus import DeadLetter, StopEvent, Until
from sagagraph.choreography.messages import SagaMessage, decode
from sagagraph.errors import BusError, ConfigurationError

log = logging.getLogger("sagagraph")
T = TypeVar("T")

DEFAULT_NAMESPACE = "sagagraph"
PROBE_TYPE = "_probe"
"""Marks a message a reader writes to the log to know where the log ends."""

_USERINFO_PASSWORD = re.compile(r"(//[^/@:]*:)[^@]*@")
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def split_namespace(url: str) -> tuple[str, str]:
    """``(namespace, url without it)``; the namespace prefixes every exchange and queue."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    namespace = DEFAULT_NAMESPACE
    kept = []
    for key, value in query:
        if key == "namespace":
            namespace = value
        else:
            kept.append((key, value))
    if not _NAMESPACE.match(namespace):
        raise ConfigurationError(
            f"bus url {redact_url(url)!r}: namespace {namespace!r} must be letters, digits, "
            "'_' and '-' (at most 64)"
        )
    return namespace, urlunsplit(parts._replace(query=urlencode(kept)))


def check_amqp_url(url: str) -> None:
    """ConfigurationError (password hidden) when ``url`` is not a usable ``amqp://`` URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
        host = parts.hostname
    except ValueError as error:
        raise ConfigurationError(f"bus url {hide_password(url)!r}: malformed ({error})") from None
    if not host:
        raise ConfigurationError(
            f"bus url {hide_password(url)!r}: no host (amqp://user:pass@host:5672/)"
        )


def hide_password(url: str) -> str:
    """The URL with its password hidden, even when it does not parse."""
    redacted = redact_url(url)
    if redacted != "<unparsable url>":
        return redacted
    return _USERINFO_PASSWORD.sub(r"\1***@", url)


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, even inside a running loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(_as_coroutine(make))
        except BaseException as error:  # carried to the caller's thread
            box["error"] = error

    worker = threading.Thread(target=target, name="sagagraph:amqp")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


async def _as_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


async def read_stream(
    connection: AbstractConnection,
    log_name: str,
    url: str,
    saga_ids: Collection[str] | None,
    until: Until | None,
    timeout: float,
    interrupt: StopEvent,
    *,
    must_reach_end: bool,
    check: Callable[[SagaMessage], str | None] | None = None,
) -> list[SagaMessage]:
    """Read the log stream from its start; a probe written first marks where it ends now.

    ``check`` says why an event is not authentic (:mod:`.signing`): such events are left out.

    ``url`` (password hidden) names the bus in errors. ConnectionError when the connection
    is lost while waiting (nothing else would say so).
    """
    wanted = set(saga_ids) if saga_ids is not None else None
    messages: list[SagaMessage] = []
    seen: set[str] = set()
    # The caller owns the connection.
    channel = await connection.channel(publisher_confirms=True)
    try:
        stream = await channel.declare_queue(log_name, passive=True)
    except ChannelNotFoundEntity:
        return []  # nothing was ever published in this namespace
    await channel.set_qos(prefetch_count=500)
    probe = f"{PROBE_TYPE}-{uuid.uuid4().hex}"
    await channel.default_exchange.publish(
        aio_pika.Message(b"{}", message_id=probe, type=PROBE_TYPE),
        routing_key=log_name,
    )
    inbox: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()
    tag = await stream.consume(inbox.put, no_ack=False, arguments={"x-stream-offset": "first"})
    deadline = time.monotonic() + timeout
    at_end = False
    try:
        while True:
            if at_end and (until is None or until(messages)):
                return messages
            if not connection.connected.is_set():
                # Nothing raises while we only wait for deliveries: look.
                raise ConnectionError("the connection to the broker was lost")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (interrupt is not None and interrupt.is_set()):
                if must_reach_end and not at_end:
                    raise BusError(
                        f"bus {url!r}: the event log did not reach its end within {timeout:g}s"
                    )
                return messages
            try:
                incoming = await asyncio.wait_for(inbox.get(), min(remaining, 0.2))
            except TimeoutError:
                continue
            await incoming.ack()
            if incoming.message_id == probe:
                at_end = True
            elif incoming.type != PROBE_TYPE:
                _collect(incoming, wanted, seen, messages, check)
    finally:
        if connection.connected.is_set():
            with suppress(*CONNECTION_EXCEPTIONS):
                await stream.cancel(tag)


def _collect(
    incoming: AbstractIncomingMessage,
    wanted: set[str] | None,
    seen: set[str],
    messages: list[SagaMessage],
    check: Callable[[SagaMessage], str | None] | None,
) -> None:
    headers = incoming.headers or {}
    if wanted is not None and headers.get("saga_id") not in wanted:
        return
    try:
        message = decode(incoming.body)
    except BusError as error:
        log.warning("event log: unreadable entry skipped: %s", error)
        return
    if wanted is not None and message["saga_id"] not in wanted:
        return
    if check is not None and check(message) is not None:
        return  # unsigned or badly signed: not the saga's, and it shadows nothing
    if message["id"] in seen:
        return  # a handler that ran twice published the same event twice
    seen.add(message["id"])
    messages.append(message)


async def peek_dead_letters(
    connection: AbstractConnection, dead_name: str, namespace: str
) -> list[DeadLetter]:
    """The dead-letter queue's messages, left in place (fetched without ack)."""
    letters: list[DeadLetter] = []
    channel = await connection.channel()
    try:
        queue = await channel.declare_queue(dead_name, passive=True)
    except ChannelNotFoundEntity:
        return []
    # Fetched without ack: closing the channel puts them back.
    while (incoming := await queue.get(no_ack=False, fail=False)) is not None:
        deaths = (incoming.headers or {}).get("x-death") or []
        first = deaths[0] if isinstance(deaths, list) and deaths else {}
        source = str(first.get("queue", "")) if isinstance(first, dict) else ""
        letters.append(
            {
                "consumer": source.removeprefix(f"{namespace}."),
                "event_id": incoming.message_id,
                "error": str(first.get("reason", "")) if isinstance(first, dict) else "",
                "body": incoming.body.decode(errors="replace"),
            }
        )
    return letters
