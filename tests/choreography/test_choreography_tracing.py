"""A choreographed saga is one trace: each event carries its emitter's trace context in a signed
``trace`` field, and each step service's spans continue it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from sagagraph.choreography.messages import decode, encode, new_message
from sagagraph.choreography.runner import run_choreographed_saga
from sagagraph.choreography.signing import BAD_SIGNATURE, Authenticator, BusKey
from sagagraph.errors import BusError
from sagagraph.saga import tracing
from tests.support.choreo_buses import fresh_bus
from tests.support.choreo_saga import file_saga
from tests.support.otel import recorded_spans


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_compensated_choreographed_saga_is_one_trace(backend: str, tmp_path: Path) -> None:
    with recorded_spans() as exporter, fresh_bus(backend, tmp_path) as bus:
        view = run_choreographed_saga(
            file_saga(tmp_path / "files"), {}, "c-1", bus, fail_at="summarizer", timeout=60
        )
        spans = exporter.get_finished_spans()
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    (run,) = [s for s in spans if s.name == "saga run"]
    assert dict(run.attributes or {})[tracing.OUTCOME] == "rolled_back"
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    handled = [s for s in spans if s.name.startswith("saga handle ")]
    assert handled, "no step service span"
    assert all("saga run" in ancestors(s, by_id) for s in handled)
    attempts = [
        (a[tracing.STEP], a[tracing.ACTION], a[tracing.OUTCOME])
        for a in (dict(s.attributes or {}) for s in spans)
        if a.get(tracing.ACTION) in ("execute", "compensate")
    ]
    events = [
        (e["step"], e["action"], e["outcome"])
        for e in view["events"]
        if e["action"] in ("execute", "compensate")
    ]
    assert sorted(attempts) == sorted(events)


def test_the_trace_field_is_signed_and_checked(tmp_path: Path) -> None:
    auth = Authenticator(BusKey(b"k3y-for-the-tests-0123456789abcdef", "a test"))
    with recorded_spans(), tracing.saga_span("c-2", "start"):
        message = new_message(type="saga_started", kind="start", saga="s", saga_id="c-2", input={})
    assert set(message["trace"]) == {"traceparent"}
    sealed = auth.seal(message)
    assert auth.check(sealed) is None
    assert decode(encode(sealed))["trace"] == message["trace"]
    grafted = {**sealed, "trace": {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}}
    assert auth.check(grafted) == BAD_SIGNATURE


def test_an_untraced_event_has_no_trace_field_and_a_malformed_one_is_refused() -> None:
    message = new_message(type="saga_started", kind="start", saga="s", saga_id="c-3", input={})
    assert "trace" not in message
    body = json.loads(encode(message))
    body["trace"] = {"traceparent": 7}
    with pytest.raises(BusError, match="field 'trace' malformed"):
        decode(json.dumps(body).encode())
