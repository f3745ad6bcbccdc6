"""The offline summarizer: an extractive summary of an exact number of words.

The paper's main text is cut into chunks (:meth:`Paper.chunks`); every chunk gets a share of
the word budget in proportion to its length, so a long paper is covered from the abstract to
the conclusion, not only its opening pages. Within a chunk, sentences are scored TF-IDF style
(words frequent in the paper but not in every sentence), with bonuses for the abstract and
the conclusion, for a section's opening sentence and for phrases that state contributions.
The chosen sentences keep their reading order; whole sentences whose lengths sum to the gap
make the count exact. Only body prose is a candidate (:func:`usable`): never a caption, a
running head, a copyright or licence line, an affiliation or e-mail line, pseudo-code, an
equation, a reference fragment, a heading glued to its first sentence, a number whose
superscript the PDF flattened ("1025 cm−3" for 10^25), nor a sentence that cannot stand alone
(an opening "also", "this" or "however"). Words the PDF broke are repaired first
(:mod:`~sagagraph.agents.text_repair`): letters lost with a ligature, words run together.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, PaperTooShortError
from sagagraph.agents.paper_sentences import cites_others
from sagagraph.agents.text_repair import longest_unknown, lost_ligatures, repair_words
from sagagraph.agents.validation_rules import PATTERNS
from sagagraph.agents.words import count_words, exact_subset, fit_to_words, split_sentences

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
_BRACKET_CITATION = re.compile(r"\s*\[\d{1,4}(?:\s*[,–-]\s*\d{1,4})*\]")
_PAREN_CITATION = re.compile(r"\s*\((?=[^()]*\b(?:19|20)\d\d[a-z]?\b)[^()]{1,120}\)")
_FOOTNOTE = re.compile(r"[.!?]\s+[∗*†‡§¶]")
_WORD = re.compile(r"[a-z][a-z-]{2,}")
_NOISE = re.compile(r"https?:|www\.|@|arxiv|\b(?:Figure|Fig\.|Table)\s*\d+\s*:", re.IGNORECASE)
# Footnote numbers glued to a word ("median time13", "S2ORC,1 a corpus"): NFKC turns a
# superscript into a plain digit, so it sticks to the word it followed.
_GLUED_NOTE = re.compile(r"(?<=[a-z]{3})\d{1,2}(?=[\s,.;:)—–]|$)")
_GLUED_COMMA_NOTE = re.compile(r"(?<=[A-Za-z\d]),\d{1,2}(?=\s)")
_MATH = re.compile(r"[∑∏∫∈∉⊂⊆⊇∀∃∇∂√∝≜|={}\\^_]|\b[a-z]\s?[<>≤≥]\s?\d")
_BACK_MATTER = re.compile(
    r"\bauthors?\W*\s*(?:roles|contributions?)|\bcontributions? of the authors\b|\bfunding\b|"
    r"\bconflicts? of interest\b|\bcompeting interests?\b|\backnowledg|\bdata availability\b|"
    r"\bsupporting information\b|\bdisclosure",
    re.IGNORECASE,
)
_POWER = re.compile(r"\b10\^[−-]?\d{1,3}\b")
_BULLET = re.compile(r"^(?:[•◦▪‣●○■–—-]|\(?[a-z0-9]{1,2}\))\s")
# A sentence that leans on the one before it cannot stand alone in a summary.
_DEPENDENT = re.compile(
    r"^(?:also|this|these|those|that|such|however|moreover|furthermore|additionally|in addition|"
    r"thus|hence|therefore|consequently|then|finally|similarly|likewise|instead|in contrast|"
    r"on the other hand|as a result|in particular|for example|for instance|otherwise|second|"
    r"secondly|third|thirdly|lastly|here|there|it|its|they|their|both|besides|nevertheless|"
    r"nonetheless|still|yet|again|accordingly|meanwhile|as such|to this end|for this reason|"
    r"conversely|in turn|by contrast|alternatively|specifically|notably|importantly)\b"
    r"|^(?:\S+\s+){1,4}(?:also|however|therefore|thus)\b",
    re.IGNORECASE,
)
# Sentences about the paper's layout, or that point at what follows, say nothing alone.
_ROADMAP = re.compile(
    r"\b(?:as follows|the following|below)\s*[.:]$|:$|^(?:the|in the) (?:final|next|following|"
    r"last|remaining|rest of the) (?:sections?|chapters?|parts?)\b|^(?:the )?rest of (?:this|the) "
    r"paper\b|\bsections? \d+(?:\.\d+)? (?:presents?|describes?|discusses|introduces?|concludes)\b",
    re.IGNORECASE,
)
# What a removed citation leaves behind: "similar to.", "as in [].", "see ( )".
_STUB = re.compile(
    r"\b(?:to|by|in|of|see|from|and|as|with|cf|e\.g|i\.e|following|following the|like|than|"
    r"from the|in the|of the|and the|or)\s*[.!?]$|\(\s*[,;]?\s*\)|\[\s*\]|\s[,;]\s*[.!?]$",
    re.IGNORECASE,
)


MAX_UNKNOWN_LETTERS = 25
"""A sentence keeping an unknown word longer than this (words run together) is not used."""
# What is not body prose, each a class of PDF debris seen in real papers.
_NOT_BODY = {
    "caption": re.compile(
        r"^(?:\(?[A-Za-z]\)\s|(?:Fig(?:ure)?s?|Table|Tab|Source|Fonte|Fuente|Scheme|Chart|"
        r"Plate|Algorithm|Listing|Supplementary)\b\.?\s*[\dA-Z]?)|\(±\s?S[ED]\)|"
        r"\b(?:Fig(?:ure)?|Table)\s+\d+[.:]\s+[A-Z]|\b(?:are|is) shown (?:as|in (?:black|red|"
        r"blue|grey|gray))\b|\bsee text for\b|\bscores? plot\b|^[A-Z]{1,4}\d?:\s|"
        r"\b(?:is|are) illustrating\b|\(\w[\w ]{0,30}: [^()]{1,80}\)",
        re.IGNORECASE,
    ),
    "keyword list": re.compile(r"^(?:[^,.;]{1,40}, ){5,}"),
    "copyright or licence": re.compile(
        r"©|\(c\) ?\d{4}|\bcopyright\b|\blicen[cs]ed?\b|\bcreative commons\b|\ball rights "
        r"reserved\b|\bopen access\b|\bpermits unrestricted\b|\bpublished by\b|\bdoi\b|"
        r"\bpublisher\b",
        re.IGNORECASE,
    ),
    "affiliation or e-mail": re.compile(
        r"@|\be-?mail\b|\bcorrespond\w*\b|\baddressed to\b|\b(?:department|faculty|school|"
        r"centre|center|institute) (?:of|for)\b|\b[A-Z]{1,2}-\d{4,5}\b|\bORCID\b",
        re.IGNORECASE,
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
        re.IGNORECASE,
    ),
}
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


def debris_kind(sentence: str) -> str | None:
    """The kind of non-body text ``sentence`` is (``caption``, ``pseudo-code``...), or None."""
    for kind, pattern in _NOT_BODY.items():
        if pattern.search(sentence):
            return kind
    if longest_unknown(sentence) > MAX_UNKNOWN_LETTERS:
        return "words run together"
    return None


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


def clean_sentence(sentence: str) -> str:
    """The sentence without citation markers (``[12]``, ``(Smith et al., 2020)``)."""
    footnote = _FOOTNOTE.search(sentence)
    if footnote:  # "...training data. ∗Equal contribution." - a footnote glued to the sentence
        sentence = sentence[: footnote.start() + 1]
    return clean_text(sentence)


def clean_text(text: str) -> str:
    """Text without citation markers and footnote numbers glued to words, spaces folded."""
    text = _PAREN_CITATION.sub("", _BRACKET_CITATION.sub("", text))
    text = _GLUED_COMMA_NOTE.sub(",", _GLUED_NOTE.sub("", text))
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return " ".join(text.split())


def usable(sentence: str) -> bool:
    """True for a prose sentence worth quoting: not a caption, a formula, or a fragment."""
    words = sentence.split()
    if not 8 <= len(words) <= 55 or _NOISE.search(sentence):
        return False
    # A power written out ("10^25") is how a superscript survives, not formula debris.
    if _MATH.search(_POWER.sub("", sentence)) or _BULLET.match(sentence) or _STUB.search(sentence):
        return False
    if _DEPENDENT.match(sentence) or _ROADMAP.search(sentence):
        return False
    if debris_kind(sentence) is not None:
        return False
    if not (sentence[0].isupper() or sentence[0] in "\"'“") or sentence[-1] not in ".!?":
        return False
    visible = [c for c in sentence if not c.isspace()]
    if sum(c.isalpha() for c in visible) < 0.75 * len(visible):
        return False
    return sum(any(c.isdigit() for c in w) for w in words) <= 0.25 * len(words)


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
    kept = [(c, s) for c, s in flat if usable(s)]
    if sum(count_words(s) for _, s in kept) < words:
        # Terse text: take what there is, debris still left out.
        kept = [(c, s) for c, s in flat if count_words(s) >= 4 and debris_kind(s) is None]
    abstract = {clean(s) for s in split_sentences(paper.abstract)}
    conclusion: set[str] = set()
    for section in paper.main_sections():
        if PATTERNS["conclusion"].search(section.name):
            conclusion |= {clean(s) for s in split_sentences(section.text)}
    term_lists = [_terms(s) for _, s in kept]
    df = Counter(t for terms in term_lists for t in set(terms))
    tf = Counter(t for terms in term_lists for t in terms)
    n = max(len(kept), 1)
    weight = {t: math.log1p(tf[t]) * math.log(1 + n / df[t]) for t in df}
    raw = [sum(weight[t] for t in set(terms)) / math.sqrt(len(terms) + 1) for terms in term_lists]
    top = max(raw, default=1.0) or 1.0
    previous_chunk = -1
    candidates: list[Candidate] = []
    for i, ((chunk, sentence), base) in enumerate(zip(kept, raw, strict=True)):
        score = base / top
        if sentence in abstract:
            score += 0.6
        if sentence in conclusion:
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
        part = (
            "abstract" if sentence in abstract else "conclusion" if sentence in conclusion else ""
        )
        candidates.append(Candidate(i, chunk, sentence, count_words(sentence), score, part))
    return candidates


def offline_summary(paper: Paper, words: int, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> str:
    """An extractive summary of exactly ``words`` words; PaperTooShortError when impossible."""
    candidates = _candidates(paper, chunk_chars, words)
    available = sum(c.words for c in candidates)
    too_short = PaperTooShortError(
        f"{paper.source}: only {available} words of usable prose; a {words}-word summary needs more"
    )
    if available < words:
        raise too_short
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
    chosen: list[Candidate] = []
    used = 0
    carry = 0.0
    for chunk in sorted(sizes):
        budget = words * chunk_words[chunk] / total + carry
        spent = 0
        ranked = sorted(
            (c for c in candidates if c.chunk == chunk), key=lambda c: (-c.score, c.position)
        )
        for c in ranked:
            if spent + c.words <= budget and used + c.words <= words:
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
    # paper's search as quick as a 10-page one's.
    rest = sorted(
        (c for c in candidates if c.position not in picked), key=lambda c: (-c.score, c.position)
    )[:MAX_FILLERS]
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
