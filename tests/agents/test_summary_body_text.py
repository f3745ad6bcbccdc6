"""Summaries are made of body prose only, with the words the PDF broke repaired.

Each class of debris real PDFs put in a summary has a synthetic case here (captions, running
heads glued to a sentence, copyright and licence lines, affiliations and e-mails, pseudo-code,
equations, reference fragments, flattened superscripts, lost ligatures, words run together);
then every corpus paper's summary is checked for all of them at once.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sagagraph.agents.offline_summary import debris_kind, offline_summary, usable
from sagagraph.agents.pdf.loader import PaperLoader, parse_paper
from sagagraph.agents.words import lost_ligatures, repair_words, split_run_together, split_sentences
from tests.agents.test_corpus import VALID
from tests.support.services import CORPUS

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

LIGATURE_LOSSES = frozenset(
    [
        "signicant",
        "signicantly",
        "benets",
        "benet",
        "rst",
        "nal",
        "nally",
        "gure",
        "gures",
        "dened",
        "dene",
        "speci",
        "specic",
        "eld",
        "elds",
        "ow",
        "ows",
        "dierent",
        "dierence",
        "eect",
        "eects",
        "oer",
        "oers",
        "ecient",
        "eciently",
        "simplied",
        "renements",
        "renement",
        "classication",
        "identied",
        "modied",
        "sucient",
        "ne",
        "nd",
        "nds",
        "nding",
        "ndings",
    ]
)
"""Words as a font that drops fi/fl/ff ligatures prints them."""


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Figure 3: Accuracy of the three models over the ten runs we made.", "caption"),
        ("Damage to chlorophyll content presented as percent (±SE) of control plants.", "caption"),
        ("Fonte: acervo do autor, fotografia tirada durante o trabalho de campo.", "caption"),
        ("© 2014 The Author(s) published by Portland Press under a CC-BY licence.", "copyright"),
        ("This is an open access article distributed under the terms of the licence.", "licence"),
        ("Correspondence should be addressed to: Anna Example, Umeå University, Sweden.", "aff"),
        ("Department of Psychology, Example University, S-90187 Umeå, Sweden today.", "aff"),
        ("Contact the first author at anna.example@example.org for the full data set.", "mail"),
        ("Remove Sj from T and add it to the set of visited nodes. end for", "pseudo"),
        ("Let f be a query function with values in the real numbers of dimension k.", "equation"),
        ("The loss is L = sum of the squared errors over every example in the batch.", "equation"),
        ("Smith, J. 2019. A study of sagas. In Proceedings of the Workshop on Agents.", "ref"),
        ("Model evaluation The fit of the model was assessed on the held-out data set.", "head"),
        ("Study population The study population comprised participants of a cohort study.", "h"),
        ("The density reaches ∼ 1025 cm−3 in the core of the plasma during the pulse.", "sup"),
        ("The halls arequitecrampedasbothprogrammesshareonebuilding in the old town.", "run"),
        ("Assume that our collection contains D documents, d1,d2,···,dD in all of it.", "eq"),
        ("Our model outperforms BM25. tiple datasets, the smallest of the five, benefit.", "2"),
        ("Anna Example initiated and designed the study and wrote the first draft of it.", "roles"),
        ("Hierarchical heat map (distance measure: Pearson) of the key metabolite levels.", "cap"),
    ],
)
def test_each_class_of_debris_is_not_a_summary_sentence(sentence: str, kind: str) -> None:
    assert debris_kind(sentence) is not None, kind
    assert not usable(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "We propose a retry policy for agent steps and show that it halves failed runs.",
        "The density reaches 10^25 per cubic metre in the core of the plasma.",
        "Participants described fatigue, isolation and a strong sense of team spirit.",
    ],
)
def test_body_prose_is_kept(sentence: str) -> None:
    assert debris_kind(sentence) is None and usable(sentence)


def test_lost_ligature_letters_are_put_back() -> None:
    broken = "The results are signicant: the data les show benets in the rst and nal gure."
    assert repair_words(broken, ligatures=True) == (
        "The results are significant: the data files show benefits in the first and final figure."
    )


def test_a_text_is_judged_by_its_damage_before_short_words_are_repaired() -> None:
    english = " ".join(["The results were measured on every run and reported in full."] * 30)
    damaged = english.replace("results", "signicant rst nal results") + " data les gure"
    assert lost_ligatures(damaged) and not lost_ligatures(english)
    spanish = " ".join(["Les presentamos el software para los dermatólogos del centro."] * 30)
    assert not lost_ligatures(spanish)
    assert repair_words("les", ligatures=False) == "les"  # short words only in a damaged text


def test_words_run_together_are_split_into_the_fewest_words() -> None:
    assert split_run_together("arequitecrampedasbothprogrammes") == (
        ["are", "quite", "cramped", "as", "both", "programmes"]
    )
    assert split_run_together("automaticallydetected") == ["automatically", "detected"]
    assert split_run_together("zqxwvy") is None


def test_a_damaged_paper_is_summarised_with_its_words_repaired() -> None:
    prose = (
        "We measured the signicant eect of retries on {n} runs of the agent pipeline. "
        "The rst result shows that the nal outputs were complete in run {n}. "
    )
    body = " ".join(prose.format(n=n) for n in range(60))
    text = f"# Retries\n\n## Abstract\n\n{body}\n\n## 1 Introduction\n\n{body}\n"
    paper = parse_paper("damaged.md", [text], markdown=True)
    summary = offline_summary(paper, 120)
    assert len(summary.split()) == 120
    assert "significant effect" in summary and "first result" in summary
    assert not LIGATURE_LOSSES & set(re.findall(r"[a-z]+", summary))


# -- every corpus paper ---------------------------------------------------------------------

NEXT = CORPUS.parent / "corpus-next"
NEXT_VALID = (
    sorted(f"papers/{p.name}" for p in (NEXT / "papers").glob("*.pdf"))
    if (NEXT / "papers").is_dir()
    else []
)


def _check_summary(path: Path) -> None:
    paper = PaperLoader().load(path)
    summary = offline_summary(paper, 300)
    assert len(summary.split()) == 300
    for sentence in split_sentences(summary):
        assert debris_kind(sentence) is None, (debris_kind(sentence), sentence)
        assert not re.search(r"©|@|\bcopyright\b|\bend for\b", sentence, re.I), sentence
        assert not re.match(r"(?:Fig(?:ure)?\.?|Table)\s*\d", sentence), sentence
    words = set(re.findall(r"[A-Za-z]+", summary))
    assert not LIGATURE_LOSSES & {w.lower() for w in words}, LIGATURE_LOSSES & words
    assert max(len(w) for w in words) <= 25


@pytest.mark.parametrize("name", VALID)
def test_every_corpus_summary_is_body_prose(name: str, corpus: Path) -> None:
    _check_summary(corpus / name)


@pytest.mark.parametrize("name", NEXT_VALID or ["(corpus-next missing)"])
def test_every_corpus_next_summary_is_body_prose(name: str, corpus: Path) -> None:
    if not NEXT_VALID:
        pytest.skip(f"no corpus-next beside {corpus}")
    _check_summary(NEXT / name)
