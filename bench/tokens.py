"""4. Token cost per valid paper, counted by a local OpenAI-compatible server.

sagagraph runs the paper saga with the ``openai`` engine (langchain-openai's ``ChatOpenAI``
over real HTTP) against ``tests/support/openai_server.py``'s scripted server, which counts
the tokens of every request and reply (about four characters a token). The naive approach sends the
whole paper to each of the three agents, with the same instructions and the same structured
outputs. The server's replies are the offline engine's results for the paper, so both sides
get the same answers and the completion tokens match; the difference is in what is sent.

Then a crash: a saga whose validator and reviewer have committed dies as its summarizer
starts; a new checkpointer and a new engine resume it. The tokens spent again on the steps
that had committed are counted (the summarizer, which never finished, runs once).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from bench.common import ROOT
from sagagraph import (
    SagaDefinition,
    StepContext,
    StepResult,
    build_saga_graph,
    open_checkpointer,
    resume_saga,
    run_saga,
)
from sagagraph.agents.engine import QuotedReview, Summary, ValidationReport
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.openai_engine import OpenAIEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.agents.pdf.loader import load_paper
from sagagraph.agents.reply_checks import as_quoted
from sagagraph.prompts import render_prompt
from tests.support.openai_server import (
    Reply,
    ScriptedOpenAIServer,
    estimate_tokens,
    request_text,
    structured,
    wants_schema,
)

TARGET = 0.75
WORDS = 300


def valid_papers() -> list[Path]:
    """The corpus's valid papers (labels.json), else the repository's example paper."""
    from tests.support.services import CORPUS

    labels_file = CORPUS / "labels.json"
    if not labels_file.exists():
        return [ROOT / "examples" / "papers" / "complete_paper.md"]
    labels = json.loads(labels_file.read_text())
    return [CORPUS / name for name, label in sorted(labels.items()) if label == "valid"]


class Script:
    """The server's answers for the paper being processed, and a ledger of what was spent."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        self.ledger: list[tuple[str, int, int]] = []
        """``(schema, prompt tokens, completion tokens)`` per request, in order."""

    def prepare(self, paper: Paper) -> None:
        offline = OfflineEngine()
        self.answers = {
            "ValidationReport": offline.validate(paper)[0].model_dump(),
            "QuotedReview": as_quoted(offline.review(paper)[0]).model_dump(),
            "Summary": offline.summarize(paper, WORDS)[0].model_dump(),
        }

    def respond(self, request: dict[str, Any]) -> Reply:
        schema = wants_schema(request) or "?"
        reply = structured(request, self.answers[schema])
        out = reply.content or "".join(c["arguments"] for c in reply.tool_calls or [])
        self.ledger.append((schema, estimate_tokens(request_text(request)), estimate_tokens(out)))
        return reply

    def spent(self, since: int = 0, schemas: tuple[str, ...] | None = None) -> int:
        return sum(p + c for s, p, c in self.ledger[since:] if schemas is None or s in schemas)


def _chat(server: ScriptedOpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-bench", base_url=server.base_url, api_key=SecretStr("sk-bench"), max_retries=0
    )


def _ask(chat: ChatOpenAI, schema: type[BaseModel], messages: list[BaseMessage]) -> None:
    out = chat.with_structured_output(schema, include_raw=True).invoke(messages)
    if not isinstance(out, dict) or not isinstance(out.get("parsed"), schema):
        raise RuntimeError(f"naive {schema.__name__}: no parsed reply")


def naive_pipeline(chat: ChatOpenAI, paper: Paper) -> None:
    """Each agent gets the whole paper, then its instructions (the same templates)."""
    whole = SystemMessage(
        render_prompt("paper", title=paper.title or "(untitled)", paper=paper.text)
    )
    shown = "(in the paper above)"
    validator = render_prompt(
        "validator",
        title=paper.title,
        outline=shown,
        first_page=shown,
        abstract=shown,
        references=shown,
        references_source="the paper above",
    )
    summarizer = render_prompt(
        "summarizer", scope="the paper above", words=WORDS, most_words=WORDS + 30
    )
    _ask(chat, ValidationReport, [whole, HumanMessage(validator)])
    _ask(chat, QuotedReview, [whole, HumanMessage(render_prompt("reviewer"))])
    _ask(chat, Summary, [whole, HumanMessage(summarizer)])


class _Crash(BaseException):
    """The process dying as the summarizer starts (not an Exception: nothing catches it)."""


@dataclasses.dataclass
class _CrashOnStart:
    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def execute(self, ctx: StepContext) -> StepResult:
        raise _Crash(f"crash as {self.name} starts")

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.inner.compensate(ctx, result)


def _crashing(definition: SagaDefinition, step: str) -> SagaDefinition:
    steps = tuple(
        dataclasses.replace(s, participant=_CrashOnStart(s.participant)) if s.name == step else s
        for s in definition.steps
    )
    return SagaDefinition(definition.name, steps, definition.deps)


def resume_after_crash(server: ScriptedOpenAIServer, script: Script, paper: Path) -> dict[str, Any]:
    """Tokens spent again, after a crash, on steps that had committed."""
    start = len(script.ledger)
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'crash.sqlite'}"
        outputs = Path(tmp) / "outputs"

        def definition() -> SagaDefinition:
            return paper_saga_definition(engine=OpenAIEngine(_chat(server)), outputs_dir=outputs)

        with open_checkpointer(url) as checkpointer:
            app = build_saga_graph(_crashing(definition(), "summarizer")).compile(
                checkpointer=checkpointer
            )
            try:
                run_saga(app, {"paper": str(paper)}, saga_id="crashed")
            except _Crash:
                pass
            else:
                raise RuntimeError("the simulated crash did not happen")
        first_run = script.spent(start)
        mark = len(script.ledger)
        with open_checkpointer(url) as checkpointer:  # a new process would open it anew
            app = build_saga_graph(definition()).compile(checkpointer=checkpointer)
            view = resume_saga(app, "crashed")
    assert view["status"] == "completed", view["reason"]
    return {
        "first_run_tokens": first_run,
        "respent_on_committed_steps": script.spent(mark, ("ValidationReport", "QuotedReview")),
        "summarizer_tokens_on_resume": script.spent(mark, ("Summary",)),
        "requests_on_resume": [s for s, _, _ in script.ledger[mark:]],
    }


def run(*, quick: bool = False) -> dict[str, Any]:
    papers = valid_papers()[: 2 if quick else None]
    script = Script()
    per_paper = []
    with ScriptedOpenAIServer(script.respond) as server, TemporaryDirectory() as tmp:
        chat = _chat(server)
        app_for: Callable[[], Any] = lambda: build_saga_graph(  # noqa: E731
            paper_saga_definition(engine=OpenAIEngine(chat), outputs_dir=Path(tmp))
        )
        with open_checkpointer("memory://") as checkpointer:
            app = app_for().compile(checkpointer=checkpointer)
            for i, path in enumerate(papers):
                paper = load_paper(path)
                script.prepare(paper)
                mark = len(script.ledger)
                view = run_saga(app, {"paper": str(path)}, saga_id=f"paper-{i}")
                ours = script.spent(mark)
                recorded = view["usage"]["input_tokens"] + view["usage"]["output_tokens"]
                mark = len(script.ledger)
                naive_pipeline(chat, paper)
                per_paper.append(
                    {
                        "paper": path.name,
                        "status": view["status"],
                        "sagagraph_tokens": ours,
                        "recorded_in_view": recorded,
                        "naive_tokens": script.spent(mark),
                    }
                )
        done = [p for p in per_paper if p["status"] == "completed"]
        script.prepare(load_paper(papers[0]))
        crash = resume_after_crash(server, script, papers[0])
    ours = sum(p["sagagraph_tokens"] for p in done) / max(len(done), 1)
    naive = sum(p["naive_tokens"] for p in done) / max(len(done), 1)
    return {
        "papers": len(done),
        "sagagraph_tokens_per_paper": ours,
        "naive_tokens_per_paper": naive,
        "ratio": ours / naive if naive else float("nan"),
        "target": TARGET,
        "per_paper": per_paper,
        "resume": crash,
    }
