"""Tracing set up from the environment: OTLP to a collector, LangSmith on or quietly off.

The command runs in a child process (it installs OpenTelemetry's process-wide tracer
provider); the collector and the LangSmith endpoint are HTTP servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from sagagraph import telemetry
from sagagraph.redaction import redact
from tests.support.http_sink import http_sink

PAPER = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"
LANGSMITH_KEY = "lsv2_pt_0123456789abcdef0123456789abcdef_0123456789"
TRACING_VARS = (
    "SAGAGRAPH_OTLP_ENDPOINT",
    *telemetry.OTEL_ENDPOINT_ENVS,
    *telemetry.LANGSMITH_SWITCHES,
    *telemetry.LANGSMITH_ENDPOINT_ENVS,
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)


def sagagraph(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in TRACING_VARS}
    clean |= {"SAGAGRAPH_LLM": "offline", "SAGAGRAPH_DB": f"sqlite:///{tmp_path / 's.sqlite'}"}
    clean |= {"SAGAGRAPH_OUTPUTS": str(tmp_path / "outputs"), **env}
    clean.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        env=clean,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])


def test_an_otlp_endpoint_receives_the_spans_of_a_compensated_saga(tmp_path: Path) -> None:
    with http_sink() as collector:
        done = sagagraph(
            tmp_path,
            *("run", str(PAPER), "--fail-at", "summarizer", "--saga-id", "otlp-1"),
            SAGAGRAPH_OTLP_ENDPOINT=collector.url,
        )
        bodies = collector.bodies("/v1/traces")
    assert done.returncode == 3, done.stderr
    spans = []
    services = set()
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            services.add(attributes.get("service.name"))
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    assert services == {"sagagraph"}

    def attrs(span: object) -> dict[str, object]:
        return {
            a.key: a.value.string_value or a.value.int_value
            for a in span.attributes  # type: ignore[attr-defined]
        }

    names = Counter(s.name for s in spans)
    assert names["saga run"] == 1
    assert names["saga.step.execute"] == 3
    assert names["saga.step.compensate"] == 3
    assert names["saga.route"] == 3
    assert all(attrs(s)["sagagraph.saga_id"] == "otlp-1" for s in spans)
    compensated = [attrs(s)["sagagraph.step"] for s in spans if s.name == "saga.step.compensate"]
    assert compensated == ["summarizer", "reviewer", "validator"]
    assert len({s.trace_id for s in spans}) == 1


def test_langsmith_without_a_reachable_endpoint_is_switched_off_in_one_line(
    tmp_path: Path,
) -> None:
    port = closed_port()
    done = sagagraph(
        tmp_path,
        *("run", str(PAPER), "--saga-id", "ls-1"),
        LANGSMITH_TRACING="true",
        LANGSMITH_ENDPOINT=f"http://127.0.0.1:{port}",
        LANGSMITH_API_KEY=LANGSMITH_KEY,
    )
    assert done.returncode == 0, done.stderr
    # One line about it, and no warning from LangSmith's client.
    notices = [line for line in done.stderr.splitlines() if line.startswith("sagagraph:")]
    assert notices == [
        f"sagagraph: LangSmith tracing is on but 127.0.0.1:{port} cannot be reached: "
        "switched off for this run"
    ]
    assert "lsv2" not in done.stderr + done.stdout
    assert "API Key" not in done.stderr


def test_langsmith_with_a_reachable_endpoint_gets_runs_tagged_with_the_saga_id(
    tmp_path: Path,
) -> None:
    with http_sink(json_reply={}) as endpoint:
        done = sagagraph(
            tmp_path,
            *("run", str(PAPER), "--saga-id", "ls-2"),
            LANGSMITH_TRACING="true",
            LANGSMITH_ENDPOINT=endpoint.url,
            LANGSMITH_API_KEY=LANGSMITH_KEY,
        )
        posted = b"".join(r.body for r in endpoint.requests if r.method == "POST")
    assert done.returncode == 0, done.stderr
    assert "cannot be reached" not in done.stderr
    assert posted, "no run reached the LangSmith endpoint"
    assert b"saga_id:ls-2" in posted  # the tag on the saga's runs
    assert LANGSMITH_KEY not in done.stderr


def test_check_langsmith_leaves_tracing_alone_when_off_or_reachable() -> None:
    said: list[str] = []
    env = {"LANGSMITH_TRACING": "false"}
    assert not telemetry.check_langsmith(said.append, env, probe=lambda url: False)
    env = {"LANGCHAIN_TRACING_V2": "true"}
    assert not telemetry.check_langsmith(said.append, env, probe=lambda url: True)
    assert env == {"LANGCHAIN_TRACING_V2": "true"} and said == []
    assert telemetry.check_langsmith(said.append, env, probe=lambda url: False)
    assert env == {"LANGCHAIN_TRACING_V2": "false"}
    assert said == [
        "LangSmith tracing is on but api.smith.langchain.com cannot be reached: "
        "switched off for this run"
    ]


def test_langsmith_keys_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCHAIN_API_KEY", "ls-key-in-env-0123")
    assert redact("key ls-key-in-env-0123 here") == "key *** here"
    # The partly masked form LangSmith's client prints shows nothing of the key either.
    assert redact("API Key: lsv2_********89") == "API Key: lsv2_***"
    assert LANGSMITH_KEY[5:] not in redact(f"x {LANGSMITH_KEY}")


def test_without_the_otel_extra_one_line_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    module = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like
    said: list[str] = []
    env = {"SAGAGRAPH_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert telemetry.configure_tracing(said.append, env) is None
    assert said == [
        "tracing: an OTLP endpoint is set but the otel extra is not installed "
        "(make extra EXTRA=otel, in the checkout); no spans are exported"
    ]
    assert telemetry.configure_tracing(said.append, {}) is None


def test_sagagraph_trace_console_prints_the_spans_of_a_rolled_back_saga_on_stderr(
    tmp_path: Path,
) -> None:
    done = sagagraph(
        tmp_path,
        *("run", str(PAPER), "--fail-at", "summarizer", "--saga-id", "console-1", "--json"),
        SAGAGRAPH_TRACE="console",
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["status"] == "rolled_back"  # stdout stays one JSON object
    decoder = json.JSONDecoder()
    spans, text, at = [], done.stderr, 0
    while (at := text.find("{", at)) >= 0:
        try:
            span, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at += 1
            continue
        spans.append(span)
        at = end
    by_name = Counter(span["name"] for span in spans)
    assert by_name["saga run"] == 1 and by_name["saga.step.compensate"] == 3
    (run,) = [span for span in spans if span["name"] == "saga run"]
    assert run["status"]["status_code"] == "ERROR"
    (failed,) = [s for s in spans if s["attributes"].get("sagagraph.outcome") == "error"]
    assert failed["attributes"]["sagagraph.step"] == "summarizer"
    (exception,) = [e for e in failed["events"] if e["name"] == "exception"]
    assert exception["attributes"]["exception.type"] == "InjectedFailure"


def test_an_unknown_sagagraph_trace_value_is_named_and_ignored() -> None:
    said: list[str] = []
    assert telemetry.configure_tracing(said.append, {"SAGAGRAPH_TRACE": "jaeger"}) is None
    assert said == [
        "tracing: SAGAGRAPH_TRACE='jaeger' is not understood (expected 'console'); ignored"
    ]
