"""The openai engine gets real papers right, through the real ChatOpenAI client over HTTP.

A scripted OpenAI-compatible server (tests/support/openai_server.py) on 127.0.0.1 answers. The
validator's prompt must carry the first page and the reference evidence, so a missed heading
does not decide the answer; a scripted model that judges only from that evidence agrees with
the offline validator on every corpus file. A summary draft of the wrong length is revised,
not cut; review points citing sections the paper lacks are sent back, then dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.models import make_chat_model
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.openai_engine import OpenAIEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import PaperLoader, load_paper
from sagagraph.agents.validation_rules import (
    CHARS_PER_TOKEN,
    DEFAULT_EVIDENCE_TOKENS,
    confirm_reported_results,
)
from sagagraph.agents.words import split_sentences
from tests.agents.test_corpus import PDFS
from tests.support.corpus import CorpusPdf
from tests.support.openai_server import (
    ScriptedOpenAIServer,
    quoted,
    request_text,
    structured,
    wants_schema,
)
from tests.support.synthetic_papers import VALID_CASES

# The real ChatOpenAI client over HTTP for each case: seconds each.
pytestmark = pytest.mark.slow

Responder = Callable[[dict[str, Any]], Any]


def engine_for(server: ScriptedOpenAIServer, **kw: Any) -> OpenAIEngine:
    chat = make_chat_model("gpt-4o-mini", base_url=server.base_url, api_key="sk-x", max_retries=0)
    return OpenAIEngine(chat, **kw)


def _tag(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}[^>]*>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return m.group(1) if m else ""


_OPENING = re.compile(
    r"introduction|background|motivation|overview|einleitung|introducci|introdu[cç][aã]o", re.I
)
_CLOSING = re.compile(r"conclu|summary|future work|fazit|discussion|perspectiv", re.I)
_OUTLINE_LINE = re.compile(r"^p\.(\d+)  (.+)$", re.M)


def evidence_judge(request: dict[str, Any]) -> Any:
    """A model that judges a ValidationReport only from the evidence in its prompt."""
    text = request_text(request)
    outline = _OUTLINE_LINE.findall(_tag(text, "outline"))
    refs = _tag(text, "reference_evidence")
    source = re.search(r'source="the reference list \((.+), p\.(\d+)\)"', text)
    found: list[dict[str, Any]] = []
    abstract = _tag(text, "abstract")
    if abstract and abstract != "(no abstract found)":
        found.append({"part": "abstract", "heading": "Abstract", "page": 1})
    opening = next((i for i, (_, h) in enumerate(outline) if _OPENING.search(h)), None)
    closing = next(
        (
            i
            for i, (_, h) in enumerate(outline)
            if opening is not None and i > opening and _CLOSING.search(h)
        ),
        None,
    )
    if opening is not None:
        found.append(
            {
                "part": "introduction",
                "heading": outline[opening][1],
                "page": int(outline[opening][0]),
            }
        )
        middle = outline[opening + 1 : closing] if closing is not None else []
        if middle:
            page, heading = middle[0]
            found.append({"part": "body", "heading": heading, "page": int(page)})
            found.append({"part": "method", "heading": heading, "page": int(page)})
    if closing is not None:
        found.append(
            {"part": "conclusion", "heading": outline[closing][1], "page": int(outline[closing][0])}
        )
    if source and len(refs.splitlines()) >= 4:
        found.append(
            {"part": "references", "heading": source.group(1), "page": int(source.group(2))}
        )
    parts = [f["part"] for f in found]
    missing = [
        p
        for p in ("abstract", "introduction", "body", "method", "conclusion", "references")
        if p not in parts
    ]
    report = {
        "is_valid": not missing,
        "found": found,
        "missing": missing,
        "reason": "All parts are present." if not missing else f"Missing {', '.join(missing)}.",
    }
    return structured(request, report)


JUDGED = [pdf for pdf in PDFS if pdf.label in ("valid", "invalid")]


@pytest.mark.parametrize("pdf", JUDGED, ids=[pdf.id for pdf in JUDGED])
def test_llm_and_offline_validators_agree_on_every_corpus_file(pdf: CorpusPdf) -> None:
    paper = PaperLoader().load(pdf.path())
    offline, _ = OfflineEngine().validate(paper)
    with ScriptedOpenAIServer(evidence_judge) as server:
        report, _ = engine_for(server).validate(paper)
    # As the validator step does: a plan is refused whatever the model says.
    report = confirm_reported_results(report, paper)
    assert report.is_valid == offline.is_valid == (pdf.label == "valid")


def test_validator_prompt_carries_first_page_and_reference_evidence(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["journal_with_toc"](tmp_path / "toc.pdf"))
    with ScriptedOpenAIServer(evidence_judge) as server:
        engine_for(server).validate(paper)
    (request,) = server.requests
    text = request_text(request)
    first_page = _tag(text, "first_page")
    assert "Reliable Sagas for Language Model Agents" in first_page  # the title block
    assert paper.abstract[:80] in " ".join(first_page.split())
    refs = _tag(text, "reference_evidence")
    assert refs.startswith("References") and "[1] J. AuthorA" in refs
    assert "Printed table of contents" in text and "6. Conclusions" in text
    budget = DEFAULT_EVIDENCE_TOKENS * CHARS_PER_TOKEN
    assert len(_tag(text, "outline")) + len(first_page) + len(refs) <= budget + 100


def test_a_paper_without_a_reference_heading_shows_its_last_page(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["german"](tmp_path / "de.pdf"))
    stripped = Paper(paper.source, paper.title, paper.pages, paper.sections[:-1])
    with ScriptedOpenAIServer(evidence_judge) as server:
        engine_for(server).validate(stripped)
    text = request_text(server.requests[0])
    assert "no reference list was detected" in text
    assert " ".join(paper.pages[-1].split())[:200] in " ".join(
        _tag(text, "reference_evidence").split()
    )


# -- summaries: revised to the count, never cut ------------------------------------------------


def _draft(words: int, start: int = 0) -> str:
    """Whole 8- and 9-word sentences summing to ``words``."""
    sentences, n = [], start
    while words > 0:
        size = 9 if words % 8 else 8
        size = words if words < 8 else size
        sentences.append(
            " ".join(
                ["The", "summary", "states", f"finding{n}"] + ["indeed"] * (size - 5) + ["clearly."]
            )
        )
        words -= size
        n += 1
    return " ".join(sentences)


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory) -> Paper:
    return load_paper(VALID_CASES["journal_with_toc"](tmp_path_factory.mktemp("p") / "p.pdf"))


def test_a_287_word_draft_is_revised_not_cut(paper: Paper) -> None:
    drafts = {"first": _draft(287), "revised": _draft(300, start=100)}
    assert len(drafts["first"].split()) == 287 and len(drafts["revised"].split()) == 300

    def respond(request: dict[str, Any]) -> Any:
        text = request_text(request)
        if "Your summary has 287 words; it must have exactly 300 words" in text:
            return structured(request, {"text": drafts["revised"]})
        return structured(request, {"text": drafts["first"]})

    with ScriptedOpenAIServer(respond) as server:
        summary, _ = engine_for(server).summarize(paper, 300)
    assert [wants_schema(r) for r in server.requests] == ["Summary", "Summary"]
    assert "Add 13 words" in request_text(server.requests[1])
    assert summary.text == drafts["revised"]


def test_a_draft_that_stays_wrong_is_fitted_with_whole_sentences_only(paper: Paper) -> None:
    long_draft = _draft(340)

    def respond(request: dict[str, Any]) -> Any:
        return structured(request, {"text": long_draft})

    with ScriptedOpenAIServer(respond) as server:
        summary, _ = engine_for(server, revision_rounds=2).summarize(paper, 300)
    assert len(server.requests) == 3  # the draft, then two revision rounds
    assert len(summary.text.split()) == 300
    paper_text = " ".join(paper.text.split())
    for sentence in split_sentences(summary.text):
        assert sentence in split_sentences(long_draft) or sentence[:-1] in paper_text, sentence


# -- reviews: points checked against the paper ------------------------------------------------


def test_review_points_citing_missing_sections_are_sent_back_then_dropped(paper: Paper) -> None:
    bad = "Section 9 reports a user study that the paper never had."
    real = " ".join(paper.pages[0].split()[20:30])  # words printed on page 1
    first = {
        "strengths": [quoted("Section 3 states the method clearly.", real), quoted(bad, real)],
        "weaknesses": [quoted("The '4. Experiments' section lacks variance.", real)],
        "suggestions": [
            quoted("Add a limitations paragraph to the 'Summary of Findings' section.", real)
        ],
    }
    second = {
        "strengths": [quoted("Section 3 states the method clearly.", real), quoted(bad, real)],
        "weaknesses": [quoted("The '4. Experiments' section lacks variance.", real)],
        "suggestions": [quoted("Add a limitations paragraph to '6. Conclusions'.", real)],
    }
    replies = iter([first, second])

    def respond(request: dict[str, Any]) -> Any:
        return structured(request, next(replies))

    with ScriptedOpenAIServer(respond) as server:
        review, _ = engine_for(server).review(paper)
    assert len(server.requests) == 2
    sent_back = request_text(server.requests[1])
    assert "not grounded in the paper" in sent_back and bad in sent_back
    assert "Summary of Findings" in sent_back
    assert review.strengths == [f'Section 3 states the method clearly. (p.1) "{real}"']
    advice = "Add a limitations paragraph to '6. Conclusions'."
    assert review.suggestions == [f'{advice} (p.1) "{real}"']
    points = review.strengths + review.weaknesses + review.suggestions
    assert json.dumps(points).count("Section 9") == 0
    assert any("Section 9" in why for why in review.dropped)
