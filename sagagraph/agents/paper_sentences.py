"""A paper's own sentences, each with the section and page it is printed on, for quoting.

The offline reviewer quotes the paper for every point it makes, so it reads the paper as
sentences it can cite: :func:`paper_sentences` splits every section (appendices included,
the reference list, acknowledgements and keyword lists left out) into sentences and finds the
page each one is printed on. :func:`about_own_work` tells a sentence about the paper's own work
("we", "our", "this study", or a sentence of its method or results) from one that reviews
others' work, and :func:`negated` a keyword the sentence denies ("does not allow for
statistically significant generalisation").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, Section, fold_lines
from sagagraph.agents.quote_check import PageKeys
from sagagraph.agents.words import split_sentences

QUOTE_WORDS = 30
"""A quoted sentence longer than this is cut, with an ellipsis, after this many words."""
OPENING_WORDS = 10
"""Words of a sentence's opening kept before an ellipsis when the evidence lies further on."""
SEARCH_PAGES = 4
"""A sentence is looked up on the page of the one before it and the few pages after."""

_NOT_OWN_SECTION = re.compile(
    r"related work|prior work|previous work|background|literature|state of the art|"
    r"references|bibliograph|acknowledg|funding|author contributions|competing interests|"
    r"conflicts? of interest|keywords|key words|index terms|ccs concepts|supporting information|"
    r"abbreviations|nomenclature"
)
_REFERENCE_LIKE = re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+[A-Z][a-z]+,)")
_OWN = re.compile(
    r"\b(?:we|our|ours|us|here)\b|\bthis (?:paper|study|work|article|package|thesis|chapter|"
    r"report|system|tool|library|approach|method|model|analysis|research|survey|review)\b|"
    r"\bthe present (?:study|work|paper|analysis)\b|\bin the current (?:study|work)\b",
    re.IGNORECASE,
)
_METHOD_OR_RESULT = re.compile(
    r"method|material|experiment|evaluation|result|finding|analysis|implementation|design|"
    r"procedure|participants|study|setup|data|discussion|conclusion|summary|abstract|"
    r"performance|measure",
    re.IGNORECASE,
)
_CITATION = re.compile(
    r"\[\d{1,3}(?:\s?[,–-]\s?\d{1,3})*\]|\([A-Z][^()]{0,60}\b(?:19|20)\d\d[a-z]?\)|"
    r"\[[A-Z][^\]]{0,80}\b(?:19|20)\d\d[a-z]?\]|\[(?:19|20)\d\d[a-z]?\]|\bet al\."
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|without|cannot|lack(?:s|ed|ing)?|unable|absence of|"
    r"n't|fail(?:s|ed)? to)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Sentence:
    """A sentence of the paper, with where it is printed."""

    text: str
    """The sentence, whitespace folded, as printed (citations kept)."""
    section: Section
    page: int
    """1-based page the sentence is printed on (its start)."""

    @property
    def quote(self) -> str:
        """The sentence as a verbatim quote: at most :data:`QUOTE_WORDS` words, double quotes
        turned into single ones so the quote's own marks stay unambiguous."""
        words = self.text.split()
        shown = " ".join(words[:QUOTE_WORDS]) + (" ..." if len(words) > QUOTE_WORDS else "")
        return re.sub(r"[\"“”]", "'", shown)

    def cite(self) -> str:
        """``(p.4) "the sentence"``: the evidence a review point carries."""
        return f'(p.{self.page}) "{self.quote}"'

    def excerpt(self, start: int, end: int) -> str:
        """A verbatim quote that shows ``text[start:end]``: the sentence's first
        :data:`QUOTE_WORDS` words when the span lies within them, else its opening words, an
        ellipsis, and the words around the span (the quote check reads ``...`` as a gap)."""
        words = self.text.split()
        if len(self.text[:end].split()) <= QUOTE_WORDS:
            return self.quote
        before = len(self.text[:start].split())
        span = len(self.text[start:end].split())
        first = max(OPENING_WORDS, before - max(2, (QUOTE_WORDS - OPENING_WORDS - span) // 2))
        last = min(len(words), max(first + QUOTE_WORDS - OPENING_WORDS, before + span + 1))
        shown = " ".join(words[:OPENING_WORDS]) + " ... " + " ".join(words[first:last])
        shown += " ..." if last < len(words) else ""
        return re.sub(r"[\"“”]", "'", shown)

    def cite_span(self, start: int, end: int) -> str:
        """``(p.4) "..."`` with :meth:`excerpt`: the evidence of a point that rests on a span."""
        return f'(p.{self.page}) "{self.excerpt(start, end)}"'


def own_section(section: Section) -> bool:
    """False for sections about others' work or back matter (related work, references...)."""
    return not _NOT_OWN_SECTION.search(section.name)


def about_own_work(sentence: Sentence) -> bool:
    """True when the sentence speaks of the paper's own work: first person or "this study",
    or any sentence of a method, results or discussion section that is not about others'."""
    if not own_section(sentence.section):
        return False
    if _OWN.search(sentence.text):
        return True
    return bool(_METHOD_OR_RESULT.search(sentence.section.name))


def cites_others(text: str) -> bool:
    """True when the sentence cites other work (``[12]``, ``(Smith et al., 2020)``): it
    then describes that work, not the paper's own."""
    return bool(_CITATION.search(text))


def negated(sentence: str, start: int) -> bool:
    """True when a negation stands in the six words before position ``start``."""
    before = sentence[:start].split()[-6:]
    return bool(_NEGATION.search(" ".join(before)))


def paper_sentences(paper: Paper, keys: PageKeys | None = None) -> list[Sentence]:
    """Every sentence of the paper's sections, in reading order, with its page.

    The reference list is left out (its entries are not the paper's statements); a sentence
    whose page cannot be found (a PDF that prints it garbled) is left out too, since it could
    not be quoted.
    """
    keys = keys or PageKeys.of(paper.pages)
    references = paper.references_section()
    out: list[Sentence] = []
    for section in paper.sections:
        if section is references or section.name.startswith(("acknowledg", "keyword")):
            continue
        page = section.page
        for text in split_sentences(fold_lines(section.text)):
            if len(text.split()) < 5 or _REFERENCE_LIKE.match(text):
                continue
            found = keys.locate(" ".join(text.split()[:QUOTE_WORDS]), page, within=SEARCH_PAGES)
            if found is None:
                continue
            page = max(page, found) if found >= section.page else page
            out.append(Sentence(text, section, found))
    return out
