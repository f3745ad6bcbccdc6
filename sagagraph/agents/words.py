"""Word counting and fitting a text to an exact word count (``len(text.split()) == n``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[“])")
# A full stop after these is not a sentence end ("Smith et al. show", "Fig. 3", "vs. BM25").
_ABBREVIATION = re.compile(
    r"(?:\b(?:vs|e\.g|i\.e|et al|cf|Fig|Figs|Eq|Eqs|Sec|Secs|Tab|No|Nos|approx|resp|Dr|Mr|"
    r"Mrs|Ms|Prof|St|Ref|Refs|Ch|Vol|pp|Inc|Corp|Ltd|Jr|Sr|al)|(?<![A-Za-z])[A-Z])\.$"
)
_MONTH = re.compile(r"\b(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.$")
# ...but a capital after a label is a name, not an initial: "see Appendix C. We then".
_LABELLED = re.compile(
    r"\b(?:Appendix|Section|Table|Figure|Part|Step|Phase|Type|Class|Group|Model|Method|Task|"
    r"Condition|Experiment|Study|Case|Option|Level|Setting|Variant|System|Stage) [A-Z]\.$"
)


def count_words(text: str) -> int:
    """Words as the contract counts them: ``len(text.split())``."""
    return len(text.split())


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, whitespace folded; abbreviations and initials do not end one."""
    folded = " ".join(text.split())
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(folded):
        piece = piece.strip()
        if not piece:
            continue
        # Only the tail can hold the abbreviation: searching it keeps this linear.
        last = sentences[-1][-40:] if sentences else ""
        dated = _MONTH.search(last) and piece[:1].isdigit()  # "from Dec. 20, 2018"
        if last and (dated or (_ABBREVIATION.search(last) and not _LABELLED.search(last))):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def exact_subset(sizes: Sequence[int], target: int) -> list[int] | None:
    """Indexes of items whose sizes sum to exactly ``target``, or None when none do.

    Items earlier in ``sizes`` are preferred (pass them best first): a sum is first reached
    with the earliest items that can reach it. Dynamic programming over the sums, so a
    300-word target over a few hundred sentences takes milliseconds.
    """
    if target == 0:
        return []
    parent: dict[int, tuple[int, int]] = {0: (-1, -1)}
    for index, size in enumerate(sizes):
        if size <= 0:
            continue
        for total in sorted(parent, reverse=True):
            reached = total + size
            if reached <= target and reached not in parent:
                parent[reached] = (total, index)
        if target in parent:
            break
    if target not in parent:
        return None
    chosen: list[int] = []
    total = target
    while total:
        total, index = parent[total]
        chosen.append(index)
    return sorted(chosen)


def fit_whole_sentences(text: str, n: int, filler: Iterable[str] = ()) -> str | None:
    """Exactly ``n`` words made of whole sentences: ``text``'s, in order, then ``filler``'s.

    The draft keeps as many of its sentences as it can (dropping from the end when it is too
    long); the gap is closed with whole filler sentences (best first) that sum exactly to it.
    None when no such combination exists: the caller decides what to do, nothing is cut.
    """
    own = split_sentences(text)
    seen = set(own)
    pool: list[str] = []
    for sentence in filler:
        for s in split_sentences(sentence):
            if s not in seen:
                seen.add(s)
                pool.append(s)
    sizes = [count_words(s) for s in pool]
    kept = list(own)
    while kept and sum(count_words(s) for s in kept) > n:
        kept.pop()
    while True:
        gap = n - sum(count_words(s) for s in kept)
        extra = exact_subset(sizes, gap)
        if extra is not None:
            result = " ".join([*kept, *(pool[i] for i in extra)])
            return result if count_words(result) == n else None
        if not kept:
            return None
        kept.pop()


def _truncate_sentence(sentence: str, words: int) -> str:
    """The first ``words`` words of ``sentence``, ended cleanly with a full stop."""
    kept = sentence.split()[:words]
    if not kept:
        return ""
    kept[-1] = kept[-1].rstrip(",;:-") or kept[-1]
    if not kept[-1].endswith((".", "!", "?")):
        kept[-1] += "."
    return " ".join(kept)


def fit_to_words(text: str, n: int, filler: Iterable[str] = ()) -> str:
    """Exactly ``n`` words from ``text``, topped up from ``filler`` sentences when short.

    Whole sentences are kept while they fit; the gap left is closed with the start of the
    next sentence (from ``text``, then ``filler``), ended with a full stop. Raises ValueError
    when text and filler together have fewer than ``n`` words.
    """
    if n <= 0:
        raise ValueError(f"word count must be positive, got {n}")
    pool = split_sentences(text)
    seen = set(pool)
    for sentence in filler:
        for s in split_sentences(sentence):
            if s not in seen:
                seen.add(s)
                pool.append(s)
    if sum(count_words(s) for s in pool) < n:
        raise ValueError(f"only {sum(count_words(s) for s in pool)} words available, need {n}")
    chosen: list[str] = []
    total = 0
    rest: list[str] = []
    for sentence in pool:
        size = count_words(sentence)
        if total + size <= n:
            chosen.append(sentence)
            total += size
        else:
            rest.append(sentence)
    gap = n - total
    while gap > 0:
        # Longest remaining sentence first, so the truncated tail carries the most meaning.
        rest.sort(key=count_words, reverse=True)
        piece = _truncate_sentence(rest.pop(0), gap)
        chosen.append(piece)
        gap -= count_words(piece)
    result = " ".join(chosen)
    assert count_words(result) == n, (count_words(result), n)
    return result
