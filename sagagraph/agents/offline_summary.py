"""The offline summarizer: an extractive summary of an exact number of words that carries the
paper's problem, method, main result with its number, and conclusion.

Four sentences are chosen first, from the abstract first (issue 37): the problem (the
abstract's opening), the method (its "we propose ..."), the main result with its number (its
first sentence that states a finding with a measured number,
:func:`~sagagraph.agents.practices.is_result`; else the conclusion's or the results'), and the
conclusion (the conclusion section's first sentence). The rest of the budget is shared among the
paper's chunks (:meth:`Paper.chunks`) in proportion to their length, so a long paper is covered
from the abstract to the conclusion; within a chunk, sentences are scored TF-IDF style (words
frequent in the paper but not in every sentence), with bonuses for the abstract and the
conclusion, for a section's opening sentence and for phrases that state contributions and
results. A sentence that says again what a chosen one said is skipped. The chosen sentences keep
their reading order; whole sentences whose lengths sum to the gap make the count exact.

Only prose that stands alone is a candidate (:mod:`~sagagraph.agents.summary_prose`): no PDF
debris, no roadmap, no pointer to a figure or table, no dangling "this". Words the PDF broke
are repaired first (:mod:`~sagagraph.agents.words`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, PaperTooShortError, fold_lines
from sagagraph.agents.paper_sentences import cites_others
from sagagraph.agents.practices import is_result
from sagagraph.agents.summary_prose import (
    clean_sentence,
    clean_text,
    debris_kind,
    leans_on_context,
    opens_a_topic,
    usable,
    usable_result,
)
from sagagraph.agents.validation_rules import PATTERNS
from sagagraph.agents.words import (
    ENGLISH_SHARE,
    count_words,
    english_share,
    exact_subset,
    fit_to_words,
    lost_ligatures,
    repair_words,
    split_sentences,
)

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

    def clean(sentence: str) -> str:
        return repair_words(clean_sentence(sentence), ligatures=ligatures)

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
    results = [s for s in abstract if is_result(s)] or [s for s in conclusion if is_result(s)]
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
        extra = exact_subset([c.words for c in rest], gap + old.words)
        if extra is not None:
            return [c for c in chosen if c is not old] + [rest[i] for i in extra]
    # Sentences of similar lengths may need several swaps: solve over all of them at once,
    # the chosen ones first so that most of the selection stays.
    order = sorted(chosen, key=lambda c: (-c.score, c.position)) + rest
    every = exact_subset([c.words for c in order], words)
    return [order[i] for i in every] if every is not None else chosen


def ranked_sentences(
    paper: Paper, words: int, *, chunk_chars: int = DEFAULT_CHUNK_CHARS
) -> list[str]:
    """The paper's usable sentences, cleaned, best first: filler that stands alone."""
    candidates = _candidates(paper, chunk_chars, words)
    return [c.text for c in sorted(candidates, key=lambda c: (-c.score, c.position))]


__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "MAX_FILLERS",
    "Candidate",
    "abstract_text",
    "clean_sentence",
    "clean_text",
    "debris_kind",
    "offline_summary",
    "ranked_sentences",
    "repeats",
    "usable",
]
