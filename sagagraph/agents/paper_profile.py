"""What kind of paper this is, and whether it reports experiments: the adaptive pipeline's facts.

The validator of the adaptive pipeline adds this profile to its findings; the pipeline's rules
choose by it (``reviewer`` or ``survey_reviewer``; ``reproducibility`` or not) and the LLM
router sees it. It is read from the paper's title, abstract and section headings, by rules:
no model call, the same on every engine.

- ``survey``: the title says survey, review or overview, or the abstract says the paper itself
  is one ("this survey", "we review the literature") and no experiment section follows;
- ``position``: no experiment section, and the abstract argues ("position paper", "we argue");
- ``theory``: no experiment section, and headings of theorems, proofs or lemmas;
- ``empirical``: a section reports experiments, an evaluation or results;
- otherwise, with no experiment section, ``position``.
"""

from __future__ import annotations

import re
from typing import Literal, TypedDict

from sagagraph.agents.paper import Paper

PaperKind = Literal["empirical", "survey", "position", "theory"]

REVIEWED_AS_SURVEY: tuple[PaperKind, ...] = ("survey", "position", "theory")
"""Kinds the survey reviewer suits: coverage, taxonomy and recency, not experiments."""

_TITLE_SURVEY = re.compile(r"\b(survey|review|overview|state of the art)\b", re.IGNORECASE)
_ABSTRACT_SURVEY = re.compile(
    r"\b(this (survey|review)|in this (survey|review)|we survey the|we review the"
    r"|systematic (literature )?review|this (paper|article) (surveys|reviews))\b",
    re.IGNORECASE,
)
_POSITION = re.compile(
    r"\b(position paper|we argue|this paper argues|we call for|research agenda)\b", re.IGNORECASE
)
_THEORY = re.compile(r"\b(theorems?|proofs?|lemmas?|propositions?)\b", re.IGNORECASE)
_EXPERIMENTS = re.compile(
    r"\b(experiments?|experimental|evaluations?|results|ablations?|benchmarks?|empirical"
    r"|user stud(y|ies)|usability stud(y|ies))\b",
    re.IGNORECASE,
)
_SHOWN = 80
"""Characters of a heading kept as evidence."""


class PaperProfile(TypedDict):
    """The kind of a paper, whether it reports experiments, and the evidence for both."""

    kind: PaperKind
    reports_experiments: bool
    """True when a section of the body reports experiments, an evaluation or results."""
    evidence: list[str]
    """Why, in a few short phrases (the headings or cues that decided)."""


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def profile_paper(paper: Paper) -> PaperProfile:
    """The paper's profile, by the rules in the module docstring."""
    headings = [s.heading for s in paper.main_sections()]
    experiments = [h for h in headings if _EXPERIMENTS.search(h)]
    abstract = paper.abstract or ""
    evidence = [f"experiment section: {_shown(h)}" for h in experiments[:3]]
    if _TITLE_SURVEY.search(paper.title):
        return _profile("survey", False, [f"title: {_shown(paper.title)}", *evidence])
    survey_cue = _ABSTRACT_SURVEY.search(abstract)
    if survey_cue and not experiments:
        return _profile("survey", False, [f"abstract: {survey_cue.group(0)!r}"])
    if experiments:
        return _profile("empirical", True, evidence)
    position_cue = _POSITION.search(abstract)
    if position_cue:
        return _profile("position", False, [f"abstract: {position_cue.group(0)!r}"])
    theory = [h for h in headings if _THEORY.search(h)]
    if theory:
        return _profile("theory", False, [f"section: {_shown(h)}" for h in theory[:3]])
    return _profile("position", False, ["no section reports experiments"])


def _profile(kind: PaperKind, experiments: bool, evidence: list[str]) -> PaperProfile:
    return {"kind": kind, "reports_experiments": experiments, "evidence": evidence}
