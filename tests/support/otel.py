"""An OpenTelemetry SDK tracer provider for tests, with an in-memory exporter.

OpenTelemetry lets a process install its global tracer provider once, so the tests share one:
:func:`recorded_spans` installs it the first time and hands out its exporter, emptied. The
exporter keeps spans only while a test holds it (:class:`Recording`), so the tests that do not
look at spans do not fill it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recording(InMemorySpanExporter):
    """The SDK's in-memory exporter, keeping spans only while ``on``."""

    on = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.on:
            return SpanExportResult.SUCCESS
        return super().export(spans)


_exporter: Recording | None = None


@contextmanager
def recorded_spans() -> Iterator[Recording]:
    """The spans ended while the block runs, in the order they ended."""
    global _exporter
    if _exporter is None:
        provider = TracerProvider()
        _exporter = Recording()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    _exporter.on = True
    try:
        yield _exporter
    finally:
        _exporter.on = False
