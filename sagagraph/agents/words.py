"""Words of a paper's text: counting them, splitting sentences, fitting a text to an exact word
count (``len(text.split()) == n``), and repairing words a PDF's text layer broke.

Some fonts map the ``fi``, ``fl`` and ``ff`` ligature glyphs to no text, so pypdf reads
"signicant", "data les", "benets"; others set words without spaces
("arequitecrampedasbothprogrammes"). With an English word list (:func:`english_words`, SCOWL,
shipped in ``agents/data``) :func:`repair_words` puts back the lost letters where exactly one
word results, and splits a long unknown word into the fewest known ones. It only acts on a
text that shows the damage (:func:`lost_ligatures`): an English text with almost no
``fi``/``fl`` left, so a word of another language or a name is never "repaired".
"""

from __future__ import annotations

import gzip
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources

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


LIGATURES = ("ffi", "ffl", "ff", "fi", "fl")
"""The letter groups a ligature glyph stands for."""
MIN_RUN_TOGETHER = 16
"""An unknown lower-case word at least this long is tried as words run together."""
_TOKEN = re.compile(r"[A-Za-z]+")
_SHORT_WORDS = frozenset({"a", "i"})


@cache
def english_words() -> frozenset[str]:
    """The shipped English word list (lower case, letters only)."""
    data = resources.files("sagagraph.agents").joinpath("data/english_words.txt.gz").read_bytes()
    return frozenset(gzip.decompress(data).decode("ascii").split())


def known(word: str) -> bool:
    """True for a word of the list, in any case (``Significant`` too)."""
    return word.lower() in english_words()


def english_share(text: str, words: int = 5000) -> float:
    """The share of English words among the first ``words`` lower-case words of three letters
    or more: names, acronyms and a formula's letters are left out, and a paper's technical terms
    ("thromboprophylaxis") are outweighed by its ordinary words."""
    tokens = re.findall(r"\b[a-z]{3,}\b", text)[:words]
    return sum(known(t) for t in tokens) / len(tokens) if tokens else 0.0


ENGLISH_SHARE = 0.6
"""A text whose :func:`english_share` reaches this is English prose."""


def lost_ligatures(text: str) -> bool:
    """True when ``text`` is English whose ``fi``/``fl``/``ff`` letters went missing.

    English prose has ``fi``, ``fl`` or ``ff`` in about one word in sixty; a text where most
    words are English and words with those letters are far rarer than that, while words
    that the repair turns into English ones are common, lost them to a ligature font.
    """
    tokens = [t.lower() for t in _TOKEN.findall(text) if len(t) > 1]
    if len(tokens) < 200:
        return False
    words = english_words()
    if sum(t in words for t in tokens) < 0.6 * len(tokens):
        return False
    with_letters = sum(any(g in t for g in ("fi", "fl", "ff")) for t in tokens)
    repairable = sum(1 for t in set(tokens) if t not in words and _restored(t) is not None)
    return with_letters < 0.004 * len(tokens) and repairable >= 3


def _restored(word: str) -> str | None:
    """The one English word ``word`` becomes with a ligature's letters put back, or None."""
    words = english_words()
    found = {
        word[:i] + group + word[i:]
        for i in range(len(word) + 1)
        for group in LIGATURES
        if word[:i] + group + word[i:] in words
    }
    return found.pop() if len(found) == 1 else None


def _cost(words: list[str], seen: Counter[str] | None = None) -> tuple[int, int, int, float, int]:
    """Fewest words first, then fewest the paper never uses whole ("In current", not "Incur
    rent"), then most pairs the paper prints side by side ("are generated one", not "are
    generate done"), then the words it uses most, then fewest of one or two letters ("are
    quite", not "a requite")."""
    seen = seen or Counter()
    unseen = sum(seen[w] == 0 for w in words)
    pairs = -sum(seen[f"{a} {b}"] > 0 for a, b in itertools.pairwise(words))
    rarity = -sum(math.log1p(seen[w]) for w in words)
    return len(words), unseen, pairs, rarity, sum(len(w) <= 2 for w in words)


def split_run_together(word: str, seen: Counter[str] | None = None) -> list[str] | None:
    """``word`` as the fewest English words that make it up (each of two letters or more, or
    ``a``/``i``), or None when it cannot be split; of splits into as many words, the one whose
    words the paper (``seen``: its words, counted) uses whole."""
    words = english_words()
    lower = word.lower()
    n = len(lower)
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(1, n + 1):
        for start in range(max(0, end - 24), end):
            done = best[start]
            piece = lower[start:end]
            if done is None or not (piece in words and (len(piece) > 1 or piece in _SHORT_WORDS)):
                continue
            candidate = [*done, piece]
            current = best[end]
            if current is None or _cost(candidate, seen) < _cost(current, seen):
                best[end] = candidate
    result = best[n]
    if result is None or len(result) < 2:
        return None
    if word[0].isupper():
        result[0] = result[0].capitalize()
    return result


MIN_REPAIRED = 5
"""Outside a text that lost its ligatures, only lower-case words this long are repaired."""


def _repair_token(token: str, ligatures: bool, seen: Counter[str] | None = None) -> str:
    lower = token.lower()
    if known(lower):
        return token
    if ligatures or (token.islower() and len(token) >= MIN_REPAIRED):
        restored = _restored(lower)
        if restored is not None:
            return restored.capitalize() if token[0].isupper() else restored
    # A long word the paper prints whole elsewhere is a term it uses, not words run together.
    if seen is not None and seen[lower] >= 2:
        return token
    if len(token) >= MIN_RUN_TOGETHER and (token.islower() or token[1:].islower()):
        pieces = split_run_together(token, seen)
        if pieces is not None:
            return " ".join(pieces)
    return token


def word_counts(text: str) -> Counter[str]:
    """The words of ``text`` (lower case, letters only) and the pairs of words it prints side
    by side (``"are generated"``), counted: what a paper prints whole."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    return Counter(tokens) + Counter(f"{a} {b}" for a, b in itertools.pairwise(tokens))


def repair_words(
    text: str, *, ligatures: bool, vocabulary: str | Counter[str] | None = None
) -> str:
    """``text`` with lost ligature letters put back and long run-together words split;
    everything else as it was. With ``ligatures`` (:func:`lost_ligatures` said the text lost
    them) every unknown word is tried, else only lower-case words of five letters or more.

    ``vocabulary`` is the paper's text (or its :func:`word_counts`): a long word it prints
    twice or more is a term of the paper, not words run together, and a run-together word
    is split into words the paper uses rather than rarer ones of the same count.
    """
    seen = word_counts(vocabulary) if isinstance(vocabulary, str) else vocabulary
    return _TOKEN.sub(lambda m: _repair_token(m.group(0), ligatures, seen), text)


def longest_unknown(text: str) -> int:
    """Letters in the longest word of ``text`` that the word list does not know (0 if none)."""
    return max((len(t) for t in _TOKEN.findall(text) if not known(t)), default=0)
