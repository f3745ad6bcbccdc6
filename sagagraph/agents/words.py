"""Word counting and fitting a text to an exact word count (``len(text.split()) == n``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def count_words(text: str) -> int:
    """Words as the contract counts them: ``len(text.split())``."""
    return len(text.split())


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, whitespace folded."""
    folded = " ".join(text.split())
    return [s.strip() for s in _SENTENCE_END.split(folded) if s.strip()]


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
