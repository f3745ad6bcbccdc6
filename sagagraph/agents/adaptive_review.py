"""The adaptive pipeline's two extra readings of a paper: a survey review and a reproducibility
check, both by rules over the paper's text (no model call, so they cost no tokens and read the
same on every engine).

- :func:`survey_review`: coverage (how many works it cites, how many sections treat them),
  taxonomy (how the body is organised: its top-level parts and their subsections) and recency
  (the years cited, and the share from the five years before the newest), each finding naming
  the section and page it rests on.
- :func:`reproducibility_check`: which artefacts the paper names (code, data, random seeds,
  hardware), each with up to two quotes and their pages, and which it does not name.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from typing import Any

from sagagraph.agents.paper import Paper, Section
from sagagraph.agents.words import split_sentences

ARTEFACTS: dict[str, re.Pattern[str]] = {
    "code": re.compile(
        r"(github\.com|gitlab\.com|bitbucket\.org|source code|our code|the code|code is"
        r"|open[- ]source|implementation is (publicly )?available|release[sd]? (the|our) code)",
        re.IGNORECASE,
    ),
    "data": re.compile(
        r"\b(datasets?|corpus|corpora|data (is|are|was|were) (publicly )?(available|released|"
        r"collected)|we (collect|release)|training data|test set|benchmark)\b",
        re.IGNORECASE,
    ),
    "seeds": re.compile(
        r"\b(random seeds?|seeds?\b|seeded|runs with different|averaged over \d+ runs"
        r"|standard deviation|variance across runs)",
        re.IGNORECASE,
    ),
    "hardware": re.compile(
        r"\b(GPUs?|TPUs?|CPUs?|V100|A100|P100|H100|K80|RTX|NVIDIA|cores|RAM|GB of memory"
        r"|machines? with|hours? (on|of training)|training time|wall[- ]clock)\b",
    ),
}
"""What counts as naming each artefact, in a sentence of the paper."""

QUOTES_PER_ARTEFACT = 2
_QUOTE_CHARS = 220
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
_ENTRY_START = re.compile(r"^\s*(\[\d+\]|\d+\.\s|[A-Z][A-Za-z'’-]+,\s+[A-Z])")
RECENT_YEARS = 5
"""A citation is recent when it is at most this many years older than the newest one."""


def _quote(sentence: str) -> str:
    text = " ".join(sentence.split())
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 3] + "..."


def _body_sections(paper: Paper) -> Iterator[Section]:
    """Every section but the references (appendices included: artefacts often sit there)."""
    references = paper.references_section()
    for section in paper.sections:
        if section is not references:
            yield section


def reproducibility_check(paper: Paper) -> dict[str, Any]:
    """Which artefacts the paper names, with quotes (``{"named": {...}, "missing": [...]}``)."""
    named: dict[str, list[dict[str, Any]]] = {}
    for section in _body_sections(paper):
        for sentence in split_sentences(section.text):
            for artefact, pattern in ARTEFACTS.items():
                quotes = named.setdefault(artefact, [])
                if len(quotes) < QUOTES_PER_ARTEFACT and pattern.search(sentence):
                    quotes.append(
                        {
                            "quote": _quote(sentence),
                            "section": section.heading,
                            "page": section.page,
                        }
                    )
    found = {a: q for a, q in named.items() if q}
    missing = [a for a in ARTEFACTS if a not in found]
    return {"named": found, "missing": missing}


def render_reproducibility(paper: Paper, check: dict[str, Any]) -> str:
    """The text of ``reproducibility.txt``."""
    lines = [f"Reproducibility of: {paper.title}", ""]
    for artefact in ARTEFACTS:
        quotes = check["named"].get(artefact)
        if not quotes:
            lines += [f"{artefact}: not named", ""]
            continue
        lines.append(f"{artefact}: named")
        lines += [f'  p.{q["page"]} ({q["section"]}): "{q["quote"]}"' for q in quotes]
        lines.append("")
    named = len(ARTEFACTS) - len(check["missing"])
    lines.append(f"Named {named} of {len(ARTEFACTS)} artefacts.")
    return "\n".join(lines) + "\n"


def _reference_years(paper: Paper) -> list[int]:
    """One year per reference entry (its last year-like number), as well as a PDF's text allows."""
    references = paper.references_section()
    if references is None:
        return []
    years: list[int] = []
    entry: list[str] = []
    for line in [*references.text.splitlines(), "[end]"]:
        if _ENTRY_START.match(line) and entry:
            found = _YEAR.findall(" ".join(entry))
            if found:
                years.append(int(found[-1]))
            entry = []
        entry.append(line)
    if len(years) < 3:  # no entry structure survived extraction: count years instead
        years = [int(y) for y in _YEAR.findall(references.text)]
    return years


def survey_review(paper: Paper) -> dict[str, Any]:
    """Coverage, taxonomy and recency findings, each citing the section and page."""
    body = [s for s in paper.main_sections() if s.name != "abstract"]
    top = [s for s in body if s.level == 1]
    references = paper.references_section()
    where = f"{references.heading}, p.{references.page}" if references else "no reference list"
    years = _reference_years(paper)
    coverage = [
        f"cites about {len(years)} dated works ({where})",
        f"treats them in {len(body)} sections and subsections, {len(top)} top-level",
    ]
    parts: list[tuple[Section, list[str]]] = []
    for section in body:
        if section.level == 1 or not parts:
            parts.append((section, []))
        else:
            parts[-1][1].append(section.title)
    taxonomy = [
        f"{s.heading} (p.{s.page}): "
        + (f"{len(subs)} part(s): {', '.join(subs[:4])}" if subs else "no subsection")
        for s, subs in parts[:8]
    ]
    if not any(s.level > 1 for s in body):
        taxonomy.append("no subsections: the organisation is flat, with no explicit taxonomy")
    recency: list[str] = []
    if years:
        newest = max(years)
        recent = sum(1 for y in years if y >= newest - RECENT_YEARS)
        recency = [
            f"cited years {min(years)}-{newest}, median {int(statistics.median(years))} ({where})",
            f"{recent} of {len(years)} ({100 * recent // len(years)}%) from {newest - RECENT_YEARS}"
            f" or later",
        ]
    else:
        recency = [f"no dated reference found ({where})"]
    return {"coverage": coverage, "taxonomy": taxonomy, "recency": recency}


def render_survey_review(paper: Paper, review: dict[str, Any]) -> str:
    """The text of ``survey_review.txt``."""
    lines = [f"Survey review of: {paper.title}", ""]
    for heading, key in (
        ("Coverage", "coverage"),
        ("Taxonomy", "taxonomy"),
        ("Recency", "recency"),
    ):
        lines += [heading, *(f"- {item}" for item in review[key]), ""]
    return "\n".join(lines)
