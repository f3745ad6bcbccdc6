"""The paper saga end to end on the real engine: the three reference scenarios on every
checkpointer, bad input, a paper too short to summarise, late writes, and secrets."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.engine import PaperEngine, Review, Summary, ValidationReport
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_agents import PaperDeps
from sagagraph.agents.paper_saga import PAPER_STEPS, paper_saga_definition
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.store import LEDGER_DIR, OutputStore
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import CompensatedKeyError, ConfigurationError, PaperLoadError
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.runner import run_saga
from sagagraph.saga.protocol import SagaDefinition, Usage
from tests.agents.test_paper_loading import make_bad_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "papers"
COMPLETE = str(EXAMPLES / "complete_paper.md")
INCOMPLETE = str(EXAMPLES / "incomplete_paper.md")
PASSWORD = "openpassword"


class CountingEngine:
    """The offline engine, recording which of its methods were called."""

    name = "offline"

    def __init__(self, inner: PaperEngine | None = None) -> None:
        self.inner = inner or OfflineEngine()
        self.calls: list[str] = []

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        self.calls.append("validate")
        return self.inner.validate(paper)

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        self.calls.append("review")
        return self.inner.review(paper)

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        self.calls.append("summarize")
        return self.inner.summarize(paper, words)


@contextmanager
def paper_app(url: str, definition: SagaDefinition) -> Iterator[Any]:
    with open_checkpointer(url) as checkpointer:
        yield build_saga_graph(definition).compile(checkpointer=checkpointer)


def visible_files(root: Path) -> list[str]:
    """Files under the outputs folder, leaving out the store's hidden ledger."""
    if not root.exists():
        return []
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )


@pytest.fixture(scope="module")
def loader() -> PaperLoader:
    return PaperLoader()


def run(
    url: str,
    outputs: Path,
    paper: str,
    *,
    engine: PaperEngine | None = None,
    loader: PaperLoader | None = None,
    fail_at: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    definition = paper_saga_definition(engine=engine, outputs_dir=outputs, loader=loader, **options)
    with paper_app(url, definition) as app:
        return run_saga(app, {"paper": paper}, fail_at=fail_at)


# --- the three reference scenarios, on memory, SQLite and PostgreSQL ------------------------


def test_scenario_1_complete_paper_completes(
    checkpointer_url: str, tmp_path: Path, loader: PaperLoader
) -> None:
    outputs = tmp_path / "outputs"
    engine = CountingEngine()
    view = run(checkpointer_url, outputs, COMPLETE, engine=engine, loader=loader)
    saga_id = view["saga_id"]
    assert view["status"] == "completed", view["reason"]
    assert view["completed"] == list(PAPER_STEPS)
    assert view["compensated"] == []
    assert visible_files(outputs) == [
        f"{saga_id}/review.txt",
        f"{saga_id}/summary.txt",
        f"{saga_id}/validation.txt",
    ]
    assert view["outputs"] == {
        "validator": str(outputs / saga_id / "validation.txt"),
        "reviewer": str(outputs / saga_id / "review.txt"),
        "summarizer": str(outputs / saga_id / "summary.txt"),
    }
    summary = (outputs / saga_id / "summary.txt").read_text()
    assert len(summary.split()) == 300
    assert view["results"]["summarizer"]["text"] == summary.strip()
    assert view["results"]["validator"]["is_valid"] is True
    assert view["results"]["reviewer"]["strengths"]
    review = (outputs / saga_id / "review.txt").read_text()
    assert "Strengths" in review and "Weaknesses" in review and "Suggestions" in review
    assert "p.1    3 Method" in (outputs / saga_id / "validation.txt").read_text()
    assert engine.calls == ["validate", "review", "summarize"]
    assert view["usage"] == {"input_tokens": 0, "output_tokens": 0}


def test_scenario_2_incomplete_paper_stops_at_the_validator(
    checkpointer_url: str, tmp_path: Path, loader: PaperLoader
) -> None:
    outputs = tmp_path / "outputs"
    engine = CountingEngine()
    view = run(checkpointer_url, outputs, INCOMPLETE, engine=engine, loader=loader)
    assert view["status"] == "rolled_back"
    assert view["reason"] == (
        "not a complete research paper: missing abstract, body, conclusion, references"
    )
    assert engine.calls == ["validate"]  # the reviewer and summarizer were never called
    assert view["completed"] == [] and view["outputs"] == {} and view["compensated"] == []
    assert view["halted"]["data"]["missing"] == ["abstract", "body", "conclusion", "references"]
    assert not outputs.exists()  # nothing written, not even the store's ledger


def test_scenario_3_failing_summarizer_compensates_in_reverse(
    checkpointer_url: str, tmp_path: Path, loader: PaperLoader
) -> None:
    outputs = tmp_path / "outputs"
    engine = CountingEngine()
    view = run(
        checkpointer_url, outputs, COMPLETE, engine=engine, loader=loader, fail_at="summarizer"
    )
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert view["completed"] == [] and view["outputs"] == {}
    assert visible_files(outputs) == []
    assert not (outputs / view["saga_id"]).exists()
    assert engine.calls == ["validate", "review"]
    store = OutputStore(outputs)
    for step in PAPER_STEPS:
        assert store.is_compensated(f"{view['saga_id']}:{step}")


# --- bad input, short papers, secrets --------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("missing", "no such file"),
        ("text_named_pdf", "not a PDF"),
        ("truncated_half", "truncated or corrupt PDF"),
        ("random_bytes", "not a PDF"),
        ("zero_bytes", "empty file"),
        ("encrypted_no_password", "password is needed"),
        ("image_only", "no text layer"),
        ("empty_txt", "empty file"),
    ],
)
def test_unreadable_paper_is_refused_before_a_saga_exists_or_rolls_back_later(
    kind: str, cause: str, tmp_path: Path, corpus: Path
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    path, _ = make_bad_file(kind, inputs, corpus)
    outputs = tmp_path / "outputs"
    engine = CountingEngine()
    with pytest.raises(PaperLoadError) as refused:  # the definition's input check
        run("memory://", outputs, str(path), engine=engine)
    assert str(refused.value).startswith("input.paper: ") and cause in str(refused.value)
    assert "\n" not in str(refused.value) and path.name in str(refused.value)
    assert not outputs.exists()

    # A paper that becomes unreadable once its saga started: the validator rolls it back.
    definition = paper_saga_definition(engine=engine, outputs_dir=outputs)
    with paper_app("memory://", dataclasses.replace(definition, check_input=None)) as app:
        view = run_saga(app, {"paper": str(path)})
    assert view["status"] == "rolled_back"
    assert "\n" not in view["reason"]
    assert "PaperLoadError" in view["reason"] and cause in view["reason"]
    assert path.name in view["reason"]
    assert view["compensated"] == ["validator"]
    assert engine.calls == []
    assert visible_files(outputs) == []


SHORT_PAPER = """# A Short Complete Paper

## Abstract

We study a small thing, describe how we measured it, and report a small but clear result
that other researchers working on small things may find useful.

## 1 Introduction

Small things matter, and this note says why in a few words.

## 2 Related Work

{filler}

## 3 Method

{filler}

## 4 Conclusion

Small things matter.

## References

1. A. Person. 2001. Small Things. Journal of Small Results.
"""


def test_a_paper_too_short_to_summarise_fails_the_summarizer(tmp_path: Path) -> None:
    filler = " ".join(["Prior studies looked at related small things in detail."] * 12)
    paper = tmp_path / "short.md"
    paper.write_text(SHORT_PAPER.format(filler=filler))
    outputs = tmp_path / "outputs"
    view = run("memory://", outputs, str(paper))
    assert view["status"] == "rolled_back"
    assert "PaperTooShortError" in view["reason"] and "300-word summary" in view["reason"]
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert visible_files(outputs) == []


def test_password_opens_the_pdf_and_never_reaches_the_state(tmp_path: Path, corpus: Path) -> None:
    pdf = corpus / "not_papers" / "encrypted_password.pdf"
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    view = run(url, tmp_path / "outputs", str(pdf), password=PASSWORD)
    # It opens (lorem ipsum), so the validator judges it rather than failing to read it.
    assert view["status"] == "rolled_back"
    assert view["reason"].startswith("not a complete research paper: missing")
    assert PASSWORD not in json.dumps(view)
    for db_file in tmp_path.glob("sagas.sqlite*"):  # the database and its journal, if any
        assert PASSWORD.encode() not in db_file.read_bytes()


def test_password_goes_to_the_loader_or_the_definition_not_both() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        paper_saga_definition(loader=PaperLoader(), password=PASSWORD)


def test_definition_shape() -> None:
    definition = paper_saga_definition(step_timeout=30)
    assert definition.name == "paper_review"
    assert definition.step_names == PAPER_STEPS
    assert isinstance(definition.deps, PaperDeps)
    assert definition.step("validator").can_halt
    assert not definition.step("reviewer").can_halt
    assert all(step.timeout == 30 for step in definition.steps)
    assert isinstance(definition.deps.engine, OfflineEngine)


# --- a late write after a timeout --------------------------------------------------------------


class BlockingEngine(CountingEngine):
    """Its summarize waits until released: a model call that outlives its step's timeout."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        self.release.wait(timeout=30)
        return super().summarize(paper, words)


class WatchedStore(OutputStore):
    """Signals every write attempt's outcome, so the test waits on an event, not a sleep."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.attempted = threading.Event()
        self.refused: list[str] = []

    def write(self, key: str, name: str, text: str) -> Path:
        try:
            return super().write(key, name, text)
        except CompensatedKeyError:
            self.refused.append(key)
            raise
        finally:
            if name == "summary.txt":
                self.attempted.set()


def test_late_summary_after_a_timeout_is_refused(tmp_path: Path, loader: PaperLoader) -> None:
    outputs = tmp_path / "outputs"
    engine = BlockingEngine()
    store = WatchedStore(outputs)
    definition = paper_saga_definition(
        engine=engine, outputs_dir=outputs, loader=loader, step_timeout=0.5
    )
    definition = dataclasses.replace(
        definition, deps=dataclasses.replace(definition.deps, store=store)
    )
    with paper_app("memory://", definition) as app:
        view = run_saga(app, {"paper": COMPLETE})
    assert view["status"] == "rolled_back"
    assert "StepTimeoutError" in view["reason"]
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    engine.release.set()  # the abandoned model call now returns and tries to write
    assert store.attempted.wait(timeout=30)
    assert store.refused == [f"{view['saga_id']}:summarizer"]
    assert visible_files(outputs) == []
