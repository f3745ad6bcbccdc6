"""The offline summarizer: an extractive summary of an exact number of words that carries the
paper's problem, method, main result with its number, and conclusion (docs/reviewer.md).

Four sentences are chosen first, from the abstract first: the problem, the method, the main
result with its measured number (:func:`~sagagraph.agents.evidence.is_result`) and the
conclusion. The rest of the budget is shared among the paper's chunks (:meth:`Paper.chunks`) in
proportion to their length, so a long paper is covered from the abstract to the conclusion;
within a chunk, sentences are scored TF-IDF style, with bonuses for the abstract and the
conclusion, a section's opening sentence and phrases that state contributions and results. A
sentence that says again what a chosen one said is skipped. The chosen sentences keep their
reading order; whole sentences whose lengths sum to the gap make the count exact. Words the
PDF broke are repaired first (:mod:`~sagagraph.agents.words`).

Only whole prose that makes sense alone is a candidate: :func:`clean_text` takes out citation
markers, footnote marks, pointers in parentheses and a structured abstract's labels;
:func:`usable` refuses PDF debris (:func:`debris_kind`) and sentences that lean on what the
summary leaves out (a roadmap, a pointer to a figure or table, a dangling "this").
:func:`usable_result` admits the main result a little more widely so the summary can carry
the number.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sagagraph.agents.evidence import cites_others, is_result, measured_numbers
from sagagraph.agents.paper import Paper, PaperTooShortError, fold_lines
from sagagraph.agents.validation_rules import PATTERNS
from sagagraph.agents.words import (
    ENGLISH_SHARE,
    count_words,
    english_share,
    exact_subset,
    fit_to_words,
    longest_unknown,
    lost_ligatures,
    repair_words,
    split_sentences,
    word_counts,
)

MAX_UNKNOWN_LETTERS = 25
"""A sentence keeping an unknown word longer than this (words run together) is not used."""

_I = re.IGNORECASE
_BRACKET_CITATION = re.compile(
    r"\s*\[\d{1,4}(?:\s*[,–-]\s*\d{1,4})*\]|\s*\[[A-Z][^\[\]]{0,100}\b(?:19|20)\d\d[a-z]?\]"
)
_PAREN_CITATION = re.compile(r"\s*\((?=[^()]*\b(?:19|20)\d\d[a-z]?\b)[^()]{1,120}\)")
# "(Table 2)", "(Figs 1 and 2)", "(see Figure 3, left)", "(Section 3.2)", "(§5)", "(Appendix B)".
_PAREN_POINTER = re.compile(
    r"\s*\((?:see\s+|cf\.\s+|as in\s+)?(?:Fig(?:ure)?s?\.?|Tables?|Tab\.|Sections?|Sec\.|§|"
    r"Appendix|Appendices|Eq(?:uation)?s?\.?|Algorithm|Chapter)\s*[\dA-Z][^()]{0,60}\)",
    _I,
)
_FOOTNOTE = re.compile(r"[.!?]\s+[∗*†‡§¶]")
_SENTENCE_END_NOTE = re.compile(r"(?<=[a-z)][.!?])\d{1,2}$")
_ABSTRACT_LABEL = re.compile(
    r"^(?:Background|Methods?|Materials and methods|Results?|Findings|Conclusions?|Objectives?|"
    r"Aims?|Purpose|Interpretation|Context|Design|Setting|Participants|Measurements)\s*:\s+"
)
_NOISE = re.compile(r"https?:|www\.|@|arxiv|\b(?:Figure|Fig\.|Table)\s*\d+\s*:", _I)
# Footnote numbers glued to a word ("median time13", "S2ORC,1 a corpus"): NFKC turns a
# superscript into a plain digit, so it sticks to the word it followed.
_GLUED_NOTE = re.compile(r"(?<=[a-z]{3})\d{1,2}(?=[\s,.;:)—–]|$)")
_GLUED_COMMA_NOTE = re.compile(r"(?<=[A-Za-z\d]),\d{1,2}(?=\s)")
_MATH = re.compile(r"[∑∏∫∈∉⊂⊆⊇∀∃∇∂√∝≜|={}\\^_]|\b[a-z]\s?[<>≤≥]\s?\d")
# "(hazard ratio = 0.97, 95% CI = 0.92–1.02)", "(Ki = 11.21 ± 0.74 nM)", "(p < 0.001)": a
# result's statistics in parentheses, not a formula.
_STATISTICS = re.compile(r"\([^()]*(?:=|<|>|≤|≥)\s*[-−+]?\d[^()]*\)")
_POWER = re.compile(r"\b10\^[−-]?\d{1,3}\b")
# "around r = 0.2", "(p < .001)", "d = 0.41": a statistic named by its symbol, not a formula.
_INLINE_STATISTIC = re.compile(
    r"(?<![\w=<>≤≥])(?:[A-Za-zρτβχηω]{1,3}²?|\W)\s?[=<>≤≥]\s?[-−+]?\.?\d[\d.,]*(?![\w=])"
)
# "30% more correct answers in 20% less time", "79% ..., as opposed to 43%": a measured
# comparison that an abstract states without a finding verb.
_COMPARED_NUMBER = re.compile(
    r"\d\s?%?\s+(?:more|less|fewer|higher|lower|faster|slower|better|worse|smaller|larger)\b|"
    r"\bas opposed to\b[^.]{0,40}\d|\b(?:more|less|fewer|higher|lower|faster|slower|better|"
    r"worse) than\b[^.]{0,40}\d",
    _I,
)


def abstract_result(sentence: str) -> bool:
    """True for a sentence of the abstract that states its main result with a measured number:
    a finding (:func:`~sagagraph.agents.evidence.is_result`) or a measured comparison without
    a finding verb ("Participants were able to provide 30% more correct answers")."""
    if is_result(sentence):
        return True
    return bool(_COMPARED_NUMBER.search(sentence)) and bool(measured_numbers(sentence))


_BULLET = re.compile(r"^(?:[•◦▪‣●○■–—-]|\(?[a-z0-9]{1,2}\))\s")
_PAPER = r"(?:paper|study|work|article|thesis|chapter|survey|review|report|research|project)"
# A sentence that leans on the one before it cannot stand alone in a summary.
_DEPENDENT = re.compile(
    r"^(?:this|these|those|that|such)\b|"
    r"^(?:also|however|moreover|furthermore|additionally|in addition|thus|hence|therefore|"
    r"consequently|then|finally|similarly|likewise|instead|in contrast|on the other hand|"
    r"as a result|in particular|for example|for instance|otherwise|second|secondly|third|"
    r"thirdly|lastly|here|there|it|its|they|their|both|besides|nevertheless|nonetheless|still|"
    r"yet|again|accordingly|meanwhile|as such|to this end|for this reason|conversely|in turn|"
    r"by contrast|alternatively|specifically|notably|importantly)\b"
    r"|^(?:\S+\s+){1,4}(?:also|however|therefore|thus)\b"
    rf"|^(?:in|for|with|by|from|of|to|under|on|at|despite|given|after|before|through|like|unlike|"
    rf"beyond|within|during|because of|due to|as a result of|to address|to solve|to overcome|"
    rf"to tackle|to handle|to avoid|to do|to achieve|to accomplish|to support|to enable|to "
    rf"implement|to test|to evaluate|to measure) (?:this|these|that|those|such|the above|the "
    rf"previous)\b"
    rf"(?! {_PAPER}\b)",
    _I,
)
# Sentences about the paper's layout, or that point at what follows, say nothing alone.
_ROADMAP = re.compile(
    r"\b(?:as follows|the following|below)\s*[.:]$|:$|^(?:the|in the) (?:final|next|following|"
    r"last|remaining|rest of the) (?:sections?|chapters?|parts?)\b|^(?:the )?rest of (?:this|the) "
    r"(?:paper|thesis|article)\b|\b(?:Sections?|Sec\.|Chapters?)\s*\d|§\s*\d|"
    r"\b(?:in|see) (?:this|the next|the following|the previous|the last|a later|later) "
    r"(?:section|chapter)s?\b|"
    r"\b(?:is|are) (?:organi[sz]ed|structured) as follows\b|\bwe (?:will )?(?:discuss|describe|"
    r"present|return to|revisit) (?:this|these|it|them)? ?(?:in (?:more )?detail )?(?:later|below|"
    r"in the (?:next|following))\b|\bwill be (?:discussed|described|presented) (?:later|below|"
    r"in)\b|\bthe rest of (?:this|the) (?:paper|thesis|article)\b|"
    r"\bas (?:will become clear|we will see|(?:discussed|mentioned|noted|described|explained) "
    r"(?:above|below|earlier|before|previously|later))\b|\bfollows\s*[.:]$|"
    r"\b(?:should|must) be noted\s*[.:]$|\b(?:as|see) (?:in )?\d+\.\d+\b|"
    r"\bsections? (?:one|two|three|four|five|six|seven|eight|nine)\b",
    _I,
)
# A sentence that needs a figure or table to make sense (a pointer in parentheses is taken out
# by clean_text; what is left points in the sentence itself).
_POINTER = re.compile(
    r"\b(?:Fig(?:ure)?s?\.?|Tables?|Appendix)\s*[\dA-Z]\b|\b(?:as|is|are|was|were) shown\b|"
    r"\bshown (?:in|on|by)\b|\bthe (?:figure|table|plot|graph)s?\b|\b(?:see|in) (?:the )?"
    r"(?:figure|table)\b|\bdepicted\b|\billustrated (?:in|by)\b",
    _I,
)
# What a removed citation leaves behind: "similar to.", "as in [].", "see ( )".
_STUB = re.compile(
    r"\b(?:to|by|in|of|see|from|and|as|with|cf|e\.g|i\.e|following|following the|like|than|"
    r"from the|in the|of the|and the|or)\s*[.!?]$|\(\s*[,;]?\s*\)|\[\s*\]|\s[,;]\s*[.!?]$",
    _I,
)
# What is not body prose, each a class of PDF debris seen in real papers.
_NOT_BODY = {
    "caption": re.compile(
        r"^(?:\(?[A-Za-z]\)\s|(?:Fig(?:ure)?s?|Table|Tab|Source|Fonte|Fuente|Scheme|Chart|"
        r"Plate|Algorithm|Listing|Supplementary)\b\.?\s*[\dA-Z]?)|\(±\s?S[ED]\)|"
        r"\b(?:Fig(?:ure)?|Table)\s+\d+[.:]\s+[A-Z]|\b(?:are|is) shown (?:as|in (?:black|red|"
        r"blue|grey|gray))\b|\bsee text for\b|\bscores? plot\b|^[A-Z]{1,4}\d?:\s|"
        r"\b(?:is|are) illustrating\b|\(\w[\w ]{0,30}: [^()]{1,80}\)|"
        # A figure's callout mark ("B○ Each code line ...", "② the user clicks").
        r"^(?:[A-Z0-9]{1,2}\s?[○◯⃝◦●◉]|[①-⑳❶-❿])",
        _I,
    ),
    "keyword list": re.compile(r"^(?:[^,.;]{1,30}, ){5,}"),
    "copyright or licence": re.compile(
        r"©|\(c\) ?\d{4}|\bcopyright\b|\blicen[cs]ed?\b|\bcreative commons\b|\ball rights "
        r"reserved\b|\bopen access\b|\bpermits unrestricted\b|\bpublished by\b|\bdoi\b|"
        r"\bpublisher\b",
        _I,
    ),
    "affiliation or e-mail": re.compile(
        r"@|\be-?mail\b|\bcorrespond\w*\b|\baddressed to\b|\b(?:department|faculty|school|"
        r"centre|center|institute) (?:of|for)\b|\b[A-Z]{1,2}-\d{4,5}\b|\bORCID\b",
        _I,
    ),
    "pseudo-code": re.compile(
        r"\bend (?:for|if|while|procedure|function)\b|←|:=|^(?:Input|Output|Require|Ensure|"
        r"Procedure|Function)\b|\b(?:for each|foreach)\b.*\bdo\b|\breturn [a-z_]\w*\s*[.;]?$",
    ),
    "equation": re.compile(
        r"^Let [A-Za-zα-ωΑ-Ω]\w{0,2} (?:be|denote)\b|[=<>≤≥]\s*[A-Za-z\d(]|···|⋯|"
        r"\b[a-z]\d,\s?[a-z]\d\b"
    ),
    "two sentences run together": re.compile(
        r"(?<!\bal)(?<!\bvs)(?<!etc)(?<!\bcf)(?<!e\.g)(?<!i\.e)\.\s[a-z]{3,}"
    ),
    "reference fragment": re.compile(
        r"\bet al\.,?\s+\(?\d{4}|\b(?:19|20)\d\d[a-z]?\.\s+[A-Z]|\bpp\.\s?\d|\bIn "
        r"Proceedings\b|\bvol\.\s?\d|\bJournal of\b|\bISBN\b|\barXiv\b",
    ),
    "flattened superscript": re.compile(
        r"[∼~≈]\s?10\d{1,2}\b|\b(?:cm|mm|nm|μm|km|m|kg|mg|g|s|ms|mol|eV|Hz|K|J|W|L|Pa)[−-]\d\b"
    ),
    "heading glued to a sentence": re.compile(
        r"^(?:[A-Z][\w’'-]*)(?: [\w’'-]+){0,5} (?:The|We|Our|This|These|Each|All|In|To|An?|Here|"
        r"For|Using|Given) [a-z]|^(?:[IVX]+-[A-Z]|[A-Z]|\d+(?:\.\d+)+|Q\d+)[.:)]\s"
    ),
    "bullet": re.compile(r"[•▪◦●■]"),
    "author contributions": re.compile(
        r"\b(?:initiated|designed|conceived|supervised) (?:and \w+ )?the (?:study|project|work)\b|"
        r"\bwrote the (?:first )?(?:draft|manuscript|paper)\b|\bcontributed to the (?:design|"
        r"writing|analysis|interpretation)\b|\bread and approved the final\b|\brevisions? of "
        r"the manuscript\b|\bwere involved in (?:the )?(?:data|study|design|analysis)",
        _I,
    ),
}


def debris_kind(sentence: str) -> str | None:
    """The kind of non-body text ``sentence`` is (``caption``, ``pseudo-code``...), or None.

    A result's statistics in parentheses ("(hazard ratio = 0.97, 95% CI = 0.92–1.02)") are
    prose, not an equation.
    """
    for kind, pattern in _NOT_BODY.items():
        text = _STATISTICS.sub("(statistics)", sentence) if kind == "equation" else sentence
        if pattern.search(text):
            return kind
    if longest_unknown(sentence) > MAX_UNKNOWN_LETTERS:
        return "words run together"
    return None


# "this" as a pronoun ("For most cases, this is not easily computable"), or a sentence that ends
# on one ("averaging inhibits this"): it points back at what the summary left out.
_PRONOUN = re.compile(
    r"\b(?:this|that) (?:is|was|means|shows|leads|allows|makes|gives|implies|suggests|requires|"
    r"explains|can|will|would|may|might|could|has|does)\b|\b(?:this|these|that|those)"
    r"\s*[.!?]$|\b(?:the|that|those|these) above\b|\babove-mentioned\b|\bthe (?:former|latter)\b|"
    r"^In \(\w{1,3}\),",
    _I,
)
_DEMONSTRATIVE = re.compile(rf"\b(?:this|these|those|such)\b(?! {_PAPER}\b)", _I)


def leans_on_context(sentence: str) -> str | None:
    """Why ``sentence`` cannot stand alone (``roadmap``, ``pointer``, ``dangling``), or None."""
    if _ROADMAP.search(sentence):
        return "roadmap"
    if _POINTER.search(sentence):
        return "pointer"
    if _DEPENDENT.match(sentence) or _PRONOUN.search(sentence):
        return "dangling"
    return None


def opens_a_topic(sentence: str) -> bool:
    """True for a sentence fit to open a summary: no "this", "these", "those" or "such" that
    points at a sentence before it ("... achieved by those methods")."""
    return not _DEMONSTRATIVE.search(sentence)


def clean_sentence(sentence: str) -> str:
    """The sentence without citation markers (``[12]``, ``(Smith et al., 2020)``)."""
    footnote = _FOOTNOTE.search(sentence)
    if footnote:  # "...training data. ∗Equal contribution." - a footnote glued to the sentence
        sentence = sentence[: footnote.start() + 1]
    return clean_text(sentence)


def clean_text(text: str) -> str:
    """Text without citation markers, pointers in parentheses, footnote numbers glued to words
    or to a sentence's end, and a structured abstract's labels; spaces folded."""
    text = _PAREN_POINTER.sub("", _PAREN_CITATION.sub("", _BRACKET_CITATION.sub("", text)))
    text = _GLUED_COMMA_NOTE.sub(",", _GLUED_NOTE.sub("", text))
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    text = " ".join(text.split())
    return _ABSTRACT_LABEL.sub("", _SENTENCE_END_NOTE.sub("", text))


def _shape(sentence: str, longest: int, masked: str) -> bool:
    """Length, start and end, letters and digits: the shape of a prose sentence."""
    words = sentence.split()
    if not 8 <= len(words) <= longest or _NOISE.search(sentence):
        return False
    # A power written out ("10^25") is how a superscript survives, not formula debris.
    if _MATH.search(_POWER.sub("", masked)) or _BULLET.match(sentence) or _STUB.search(sentence):
        return False
    if leans_on_context(sentence) is not None:
        return False
    if sentence[-1] not in ".!":  # a question asks; a summary states
        return False
    visible = [c for c in masked if not c.isspace()]
    return sum(c.isalpha() for c in visible) >= 0.75 * len(visible)


def usable(sentence: str) -> bool:
    """True for a prose sentence worth quoting: not a caption, a formula, or a fragment, and
    one that stands alone (no roadmap, pointer or dangling "this")."""
    if not _shape(sentence, 55, sentence) or debris_kind(sentence) is not None:
        return False
    if not (sentence[0].isupper() or sentence[0] in "\"'“"):
        return False
    words = sentence.split()
    return sum(any(c.isdigit() for c in w) for w in words) <= 0.25 * len(words)


# "In particular, CC achieves an NMI of 0.705": an opener that narrows what came before, but
# leaves a result that reads alone.
_NARROWING = re.compile(r"^(?:In particular|Specifically|Notably|More specifically),\s+(?=\w)")


def usable_result(sentence: str) -> bool:
    """:func:`usable` for the sentence that carries the main result: its statistics in
    parentheses are no formula, it may open on its number or on "In particular,", and it may
    run to 70 words."""
    core = _NARROWING.sub("", sentence)
    masked = _INLINE_STATISTIC.sub(" statistic", _STATISTICS.sub("(statistics)", core))
    if not _shape(core, 70, masked) or debris_kind(masked) is not None:
        return False
    return sentence[0].isupper() or sentence[0].isdigit()


MAX_FILLERS = 300
"""Unused sentences, best first, searched for a set that closes the gap to the word count."""
DEFAULT_CHUNK_CHARS = 12_000
"""Characters per chunk: a few pages of a two-column paper."""

# A word list reads better as prose than as a hundred quoted strings.
_STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be because been before being
    between both but by can could did do does doing during each few for from further had has
    have having here how however i if in into is it its itself just more most no nor not of
    on once only or other our ours out over own same she should so some such than that the
    their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your et al fig figure
    table eg ie using used use based one two three thus hence may might must shall""".split()  # noqa: SIM905
)
_CUE = re.compile(
    r"\b(we (propose|present|introduce|show|find|found|demonstrate|release|describe|develop)|"
    r"in this (paper|work)|this paper|our (results|approach|method|model|findings)|"
    r"outperform\w*|state[- ]of[- ]the[- ]art|achiev\w+|conclude)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z][a-z-]{2,}")
_BACK_MATTER = re.compile(
    r"\bauthors?\W*\s*(?:roles|contributions?)|\bcontributions? of the authors\b|\bfunding\b|"
    r"\bconflicts? of interest\b|\bcompeting interests?\b|\backnowledg|\bdata availability\b|"
    r"\bsupporting information\b|\bdisclosure",
    re.IGNORECASE,
)
_RESULT_CUE = re.compile(
    r"\b(?:we (?:found|find|show|showed|demonstrate\w*|observe\w*)|results? (?:show|indicate|"
    r"suggest|demonstrate)|significantly|outperform\w*|no evidence|(?:was|were) associated "
    r"with|improv\w+ (?:by|over)|achiev\w+)\b",
    re.IGNORECASE,
)
_METHOD_CUE = re.compile(
    r"\b(?:we (?:used|use|employed|employ|applied|apply|conducted|collected|trained|measured|"
    r"analy[sz]ed|designed|implemented|propose|present|introduce)|(?:was|were) (?:used|measured|"
    r"assessed|analy[sz]ed|collected|estimated))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    """A sentence that may go into the summary."""

    position: int
    """Index in reading order over the whole paper."""
    chunk: int
    text: str
    words: int
    score: float
    part: str = ""
    """``abstract`` or ``conclusion`` when the sentence is from one, else ''."""
    slot: str = ""
    """``problem``, ``method``, ``result`` or ``conclusion`` when chosen first for that, else ''."""


def _terms(sentence: str) -> list[str]:
    return [w for w in _WORD.findall(sentence.lower()) if w not in _STOPWORDS]


def _chunk_sentences(paper: Paper, chunk_chars: int) -> list[list[str]]:
    """Sentences of each section piece of each chunk, without their heading lines.

    Each piece gets its share of the word budget, so a short paper (one chunk) is covered
    section by section too, from the problem to the conclusion.
    """
    headings = {s.heading for s in paper.sections} | {"Abstract"}
    pieces: list[list[str]] = []
    for chunk in paper.chunks(chunk_chars):
        for block in chunk.split("\n\n"):
            first, _, rest = block.partition("\n")
            if first in headings and _BACK_MATTER.search(first):
                continue  # authors' roles, funding, conflicts: not what the paper says
            text = rest if rest and first in headings else block
            pieces.append(split_sentences(text))
    return pieces


REPEAT_OVERLAP = 0.65
"""A sentence sharing this share of its word stems with a chosen one (Jaccard) says it again."""
SLOT_BONUS = 10.0
"""Added to a slot's score, so budgets take it first and fitting never swaps it out."""
_ABSTRACT_NAMES = re.compile(r"^(?:abstract|summary|resum|zusammenfassung|kurzfassung|sommario)")


def _words_of(sentence: str) -> frozenset[str]:
    """The sentence's word stems (their first six letters: "propose" and "proposed" agree)."""
    return frozenset(w[:6] for w in re.findall(r"[a-z0-9]+", sentence.lower()) if len(w) > 2)


def repeats(sentence: str, chosen: Sequence[str]) -> bool:
    """True when ``sentence`` says again what one of ``chosen`` says."""
    words = _words_of(sentence)
    for other in chosen:
        union = words | _words_of(other)
        if union and len(words & _words_of(other)) / len(union) >= REPEAT_OVERLAP:
            return True
    return False


def _english(text: str, share: float = ENGLISH_SHARE) -> bool:
    """True when at least ``share`` of the words of ``text`` are English words."""
    return english_share(text) >= share


def abstract_text(paper: Paper) -> str:
    """The abstract the summary draws on: an English one when the paper has several (a thesis
    with a Resumo and an Abstract), else :attr:`Paper.abstract`."""
    heads = [s for s in paper.sections[:10] if _ABSTRACT_NAMES.match(s.name)]
    english = next((s for s in heads if _english(s.text)), None)
    return fold_lines(english.text) if english is not None and len(heads) > 1 else paper.abstract


def _closing_text(paper: Paper) -> str:
    sections = paper.main_sections()
    closing = [s for s in sections if PATTERNS["conclusion"].search(s.name)]
    closing = closing or [s for s in sections if re.search(r"discussion", s.name)]
    return " ".join(fold_lines(s.text) for s in closing)


def _candidates(paper: Paper, chunk_chars: int, words: int) -> list[Candidate]:
    chunks = _chunk_sentences(paper, chunk_chars)
    ligatures = lost_ligatures(paper.text)
    seen = word_counts(paper.text)

    def clean(sentence: str) -> str:
        return repair_words(clean_sentence(sentence), ligatures=ligatures, vocabulary=seen)

    flat = [(c, clean(s)) for c, sentences in enumerate(chunks) for s in sentences]
    # A sentence that cited others describes their work: it ranks below the paper's own.
    citing = {clean(s) for sentences in chunks for s in sentences if cites_others(s)}
    first: dict[str, int] = {}
    for c, s in flat:
        first.setdefault(s, c)
    flat = [(c, s) for s, c in first.items()]  # a repeated sentence counts once, where it began
    if _english(paper.text):
        # An English paper's Resumo or Zusammenfassung is no sentence for an English summary.
        flat = [(c, s) for c, s in flat if _english(s, 0.4)]
    abstract = [clean(s) for s in split_sentences(abstract_text(paper))]
    conclusion = [clean(s) for s in split_sentences(_closing_text(paper))]
    slots = _slots(flat, abstract, conclusion)
    kept = [(i, c, s) for i, (c, s) in enumerate(flat) if usable(s) or s in slots]
    if sum(count_words(s) for _, _, s in kept) < words:
        # Terse text: take what there is, debris and sentences that lean on others left out.
        kept = [
            (i, c, s)
            for i, (c, s) in enumerate(flat)
            if count_words(s) >= 4 and debris_kind(s) is None and leans_on_context(s) is None
        ]
    term_lists = [_terms(s) for _, _, s in kept]
    df = Counter(t for terms in term_lists for t in set(terms))
    tf = Counter(t for terms in term_lists for t in terms)
    n = max(len(kept), 1)
    weight = {t: math.log1p(tf[t]) * math.log(1 + n / df[t]) for t in df}
    raw = [sum(weight[t] for t in set(terms)) / math.sqrt(len(terms) + 1) for terms in term_lists]
    top = max(raw, default=1.0) or 1.0
    in_abstract, in_conclusion = set(abstract), set(conclusion)
    previous_chunk = -1
    candidates: list[Candidate] = []
    for (position, chunk, sentence), base in zip(kept, raw, strict=True):
        score = base / top
        if sentence in in_abstract:
            score += 0.6
        if sentence in in_conclusion:
            score += 0.4
        if _CUE.search(sentence):
            score += 0.3
        # A summary says what was done and what was found: method and result sentences rank up.
        if _RESULT_CUE.search(sentence):
            score += 0.35
        if _METHOD_CUE.search(sentence):
            score += 0.15
        if sentence in citing:
            score -= 0.25
        if chunk != previous_chunk:
            score += 0.1  # a chunk's opening sentence usually frames it
        previous_chunk = chunk
        slot = slots.get(sentence, "")
        score += SLOT_BONUS if slot else 0.0
        part = (
            "abstract"
            if sentence in in_abstract
            else "conclusion"
            if sentence in in_conclusion
            else ""
        )
        candidates.append(
            Candidate(position, chunk, sentence, count_words(sentence), score, part, slot)
        )
    return candidates


def _slots(
    flat: Sequence[tuple[int, str]], abstract: Sequence[str], conclusion: Sequence[str]
) -> dict[str, str]:
    """The sentences chosen first: problem, method, main result, conclusion (see the module
    docstring), by their text."""
    present = {s for _, s in flat}
    abstract = [s for s in abstract if s in present]
    conclusion = [s for s in conclusion if s in present and s not in abstract]
    slots: dict[str, str] = {}

    def pick(name: str, pool: Sequence[str], check: Callable[[str], bool] = usable) -> None:
        found = next((s for s in pool if s not in slots and check(s)), None)
        if found is not None and not repeats(found, list(slots)):
            slots[found] = name

    pick("problem", abstract, lambda s: usable(s) and opens_a_topic(s))
    pick("method", [s for s in abstract if _CUE.search(s) or _METHOD_CUE.search(s)])
    results = [s for s in abstract if abstract_result(s)] or [s for s in conclusion if is_result(s)]
    results = results or [s for _, s in flat if is_result(s) and not cites_others(s)]
    pick("result", results, usable_result)
    pick("conclusion", conclusion)
    return slots


def offline_summary(paper: Paper, words: int, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> str:
    """An extractive summary of exactly ``words`` words; PaperTooShortError when impossible."""
    candidates = _candidates(paper, chunk_chars, words)
    available = sum(c.words for c in candidates)
    too_short = PaperTooShortError(
        f"{paper.source}: only {available} words of usable prose; a {words}-word summary needs more"
    )
    if available < words:
        raise too_short
    chosen = [c for c in candidates if c.slot]
    while sum(c.words for c in chosen) > words:  # a tiny summary keeps the first slots
        chosen.pop()
    used = sum(c.words for c in chosen)
    sizes = Counter(c.chunk for c in candidates)
    chunk_words = Counter({chunk: 0 for chunk in sizes})
    for c in candidates:
        chunk_words[c.chunk] += c.words
    # The abstract states the problem and the conclusion the outcome: each gets at least a
    # fixed share of the words, however short it is next to the body.
    floors = {"abstract": 0.25, "conclusion": 0.12}
    total_words = sum(chunk_words.values())
    for c in candidates:
        if c.part:
            chunk_words[c.chunk] = max(chunk_words[c.chunk], int(floors[c.part] * total_words))
    total = sum(chunk_words.values())
    carry = 0.0
    for chunk in sorted(sizes):
        budget = (words - sum(c.words for c in chosen if c.slot)) * chunk_words[chunk] / total
        budget += carry
        spent = 0
        ranked = sorted(
            (c for c in candidates if c.chunk == chunk and not c.slot),
            key=lambda c: (-c.score, c.position),
        )
        for c in ranked:
            if spent + c.words <= budget and used + c.words <= words:
                if repeats(c.text, [x.text for x in chosen]):
                    continue
                chosen.append(c)
                used += c.words
                spent += c.words
        carry = budget - spent  # what a chunk could not use passes to the next one
    chosen = _fill_exactly(chosen, candidates, words)
    chosen.sort(key=lambda c: c.position)
    text = " ".join(c.text for c in chosen)
    if count_words(text) == words:
        return text
    picked = {c.position for c in chosen}
    filler = [
        c.text
        for c in sorted(candidates, key=lambda c: (-c.score, c.position))
        if c.position not in picked
    ]
    # Only a tiny paper gets here (no set of its sentences sums to the gap): the last
    # resort closes the gap with the start of a sentence.
    try:
        return fit_to_words(text, words, filler)
    except ValueError:  # repeated sentences counted once leave too few words
        raise too_short from None


def _fill_exactly(
    chosen: list[Candidate], candidates: list[Candidate], words: int
) -> list[Candidate]:
    """``chosen`` topped up with whole sentences to exactly ``words`` words when possible.

    The gap is closed by the best-scored unused sentences whose lengths sum to it exactly
    (:func:`~sagagraph.agents.words.exact_subset`); failing that, the weakest chosen sentence
    is swapped for such a set. A summary ends on a whole sentence, never on a cut one.
    """
    picked = {c.position for c in chosen}
    # The best few hundred unused sentences are plenty to close a gap, and keep a 500-page
    # paper's search as quick as a 10-page one's. None of them may say again what another says.
    texts = [c.text for c in chosen]
    rest: list[Candidate] = []
    for c in sorted(
        (c for c in candidates if c.position not in picked), key=lambda c: (-c.score, c.position)
    ):
        if len(rest) >= MAX_FILLERS:
            break
        if not repeats(c.text, texts):
            rest.append(c)
            texts.append(c.text)
    gap = words - sum(c.words for c in chosen)
    extra = exact_subset([c.words for c in rest], gap) if gap >= 0 else None
    if extra is not None:
        return [*chosen, *(rest[i] for i in extra)]
    for old in sorted(chosen, key=lambda c: (c.score, -c.position)):
        if old.slot:
            continue  # the problem, method, result and conclusion stay
        extra = exact_subset([c.words for c in rest], gap + old.words)
        if extra is not None:
            return [c for c in chosen if c is not old] + [rest[i] for i in extra]
    # Sentences of similar lengths may need several swaps: solve over all of them at once,
    # the chosen ones first so that most of the selection stays, the slots kept whole.
    slots = [c for c in chosen if c.slot]
    order = sorted((c for c in chosen if not c.slot), key=lambda c: (-c.score, c.position)) + rest
    every = exact_subset([c.words for c in order], words - sum(c.words for c in slots))
    if every is not None:
        return slots + [order[i] for i in every]
    order = sorted(chosen, key=lambda c: (-c.score, c.position)) + rest
    every = exact_subset([c.words for c in order], words)
    return [order[i] for i in every] if every is not None else chosen


def ranked_sentences(
    paper: Paper, words: int, *, chunk_chars: int = DEFAULT_CHUNK_CHARS
) -> list[str]:
    """The paper's usable sentences, cleaned, best first: filler that stands alone."""
    candidates = _candidates(paper, chunk_chars, words)
    return [c.text for c in sorted(candidates, key=lambda c: (-c.score, c.position))]
