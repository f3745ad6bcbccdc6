"""Tracing set-up from the environment, for the command line (and any application that wants it).

- OpenTelemetry: ``SAGAGRAPH_OTLP_ENDPOINT`` (a collector's base URL, such as
  ``http://127.0.0.1:4318``), or OpenTelemetry's own ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, makes :func:`configure_tracing` install an SDK
  tracer provider that sends sagagraph's spans (:mod:`sagagraph.saga.tracing`) over OTLP/HTTP.
  That needs the ``otel`` extra (``make extra EXTRA=otel`` in the checkout); without it, one
  line says so and nothing else changes.
- ``SAGAGRAPH_TRACE=console`` prints every span as JSON on stderr when it ends, to look at
  spans locally with no collector (the ``otel`` extra, as above).
- LangSmith: LangChain traces every run to LangSmith when ``LANGSMITH_TRACING`` (or
  ``LANGCHAIN_TRACING_V2``) is true. When its endpoint cannot be reached (no network),
  LangSmith would print a warning per batch, with the API key partly masked, and hold the
  process at exit while it retries; :func:`check_langsmith` switches it off for the process
  instead, after one line saying why. The API keys (``LANGSMITH_API_KEY``,
  ``LANGCHAIN_API_KEY``) are secrets to :mod:`sagagraph.redaction`.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

TRACE_ENV = "SAGAGRAPH_TRACE"
"""``console``: print spans on stderr (OpenTelemetry's console exporter)."""
OTLP_ENV = "SAGAGRAPH_OTLP_ENDPOINT"
"""Base URL of an OTLP/HTTP collector; spans go to ``<url>/v1/traces``."""
OTEL_ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""OpenTelemetry's standard variables, read by its exporter itself."""
EXTRA_INSTALL = "make extra EXTRA=otel, in the checkout"
"""How to add the ``otel`` extra: sagagraph is installed from its checkout (no registry serves
it), into the checkout's ``.venv`` (see the Makefile)."""
SERVICE_NAME = "sagagraph"
"""The ``service.name`` of the spans, unless ``OTEL_SERVICE_NAME`` says otherwise."""

LANGSMITH_SWITCHES = (
    "LANGSMITH_TRACING",
    "LANGSMITH_TRACING_V2",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_TRACING",
)
"""The variables that turn LangChain's LangSmith tracing on (any of them true)."""
LANGSMITH_ENDPOINT_ENVS = ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
LANGSMITH_DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
PROBE_TIMEOUT = 1.5
"""Seconds the LangSmith endpoint has to accept a connection before tracing is switched off."""

Say = Callable[[str], None]


def _traces_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/v1/traces") else f"{base}/v1/traces"


def configure_tracing(say: Say, environ: MutableMapping[str, str] | None = None) -> Any:
    """Install a tracer provider exporting over OTLP/HTTP when the environment names a
    collector; return it (None when none is named or the ``otel`` extra is missing).

    ``say`` prints a one-line notice. The spans are exported in batches on a background
    thread; :func:`flush_tracing` sends what is left before the process ends.
    """
    env = os.environ if environ is None else environ
    ours = env.get(OTLP_ENV, "").strip()
    console = env.get(TRACE_ENV, "").strip().lower()
    if console and console != "console":
        say(f"tracing: {TRACE_ENV}={console!r} is not understood (expected 'console'); ignored")
        console = ""
    otlp = bool(ours) or any(env.get(name, "").strip() for name in OTEL_ENDPOINT_ENVS)
    if not otlp and not console:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )

        if otlp:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        wanted = "an OTLP endpoint is set" if otlp else f"{TRACE_ENV}=console is set"
        say(
            f"tracing: {wanted} but the otel extra is not installed "
            f"({EXTRA_INSTALL}); no spans are exported"
        )
        return None
    service = env.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if otlp:
        # Without our variable the exporter reads OpenTelemetry's own (endpoint, headers...).
        exporter = OTLPSpanExporter(endpoint=_traces_url(ours)) if ours else OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if console:
        # stderr, span by span as each ends: stdout stays the command's (one JSON object
        # under --json), and a span is on screen before the command exits.
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    trace.set_tracer_provider(provider)
    return provider


def flush_tracing(provider: Any, timeout_millis: int = 5_000) -> None:
    """Send the spans not exported yet (at most ``timeout_millis``), then stop exporting."""
    if provider is not None:
        provider.force_flush(timeout_millis)
        provider.shutdown()


def langsmith_tracing_on(environ: MutableMapping[str, str] | None = None) -> bool:
    """True when the environment turns LangChain's LangSmith tracing on."""
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip().lower() == "true" for name in LANGSMITH_SWITCHES)


def langsmith_endpoint(environ: MutableMapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    for name in LANGSMITH_ENDPOINT_ENVS:
        if env.get(name, "").strip():
            return env[name].strip()
    return LANGSMITH_DEFAULT_ENDPOINT


def reachable(url: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """True when a TCP connection to ``url``'s host and port opens within ``timeout`` seconds.

    The name lookup has no timeout of its own, so the probe runs on a daemon thread that is
    given up on at the deadline.
    """
    parts = urlsplit(url)
    if not parts.hostname:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    opened = threading.Event()

    def probe() -> None:
        try:
            with socket.create_connection((parts.hostname, port), timeout=timeout):
                opened.set()
        except (OSError, ValueError):
            pass

    thread = threading.Thread(target=probe, name="sagagraph:langsmith-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return opened.is_set()


def check_langsmith(
    say: Say,
    environ: MutableMapping[str, str] | None = None,
    probe: Callable[[str], bool] = reachable,
) -> bool:
    """When LangSmith tracing is on and its endpoint cannot be reached, switch it off for this
    process (before LangChain reads the variables) and say so in one line; True when switched
    off. Its API key is never printed, not even masked."""
    env = os.environ if environ is None else environ
    if not langsmith_tracing_on(env):
        return False
    endpoint = langsmith_endpoint(env)
    if probe(endpoint):
        return False
    for name in LANGSMITH_SWITCHES:
        if name in env:
            env[name] = "false"
    parts = urlsplit(endpoint)
    host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname or "its endpoint"
    say(f"LangSmith tracing is on but {host} cannot be reached: switched off for this run")
    return True
