"""The offline engine: deterministic, no network, no tokens; and its reviewer.

:class:`OfflineEngine` validates with heading rules (:mod:`~sagagraph.agents.validation_rules`),
reviews with heuristics over the paper's own content (:func:`offline_review`, below) and
summarises extractively (:mod:`~sagagraph.agents.offline_summary`). The same paper always gets
the same results, which makes it the engine for tests, notebooks and machines without a key.

The offline reviewer says only what its rules can check in the paper's own words, and
withholds the rest (docs/reviewer.md): a strength rests on evidence of its kind
(:mod:`~sagagraph.agents.evidence`); a weakness quotes :func:`stated_limits` or
:func:`left_for_later`, or states the fact :func:`limitations_heading` checked, and never
claims that something is absent, which a keyword search cannot know; the kind of paper is
named only on strong evidence (:mod:`~sagagraph.agents.paper_kind`). Every point carries
``(p.N) "the paper's words"``, which :mod:`~sagagraph.agents.reply_checks` verifies. When
nothing checkable is found (always, for a paper not in English), the review says so in a
point that quotes the paper's own statement of its aim.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from sagagraph.agents.engine import Review, Summary, ValidationReport
from sagagraph.agents.evidence import (
    Evidence,
    Sentence,
    cites_others,
    comparisons,
    first,
    in_abstract,
    introductory,
    own_names,
    own_section,
    paper_sentences,
    releases,
    results,
    samples,
    spreads,
    symbolic,
)
from sagagraph.agents.offline_summary import DEFAULT_CHUNK_CHARS, debris_kind, offline_summary
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_kind import KindEvidence, paper_kind
from sagagraph.agents.reply_checks import PageKeys
from sagagraph.agents.validation_rules import validation_report
from sagagraph.agents.words import ENGLISH_SHARE, english_share
from sagagraph.saga.protocol import Usage

_I = re.IGNORECASE
_OWN_SUBJECT = (
    r"(?:we|our|ours|this (?:study|work|paper|article|thesis|project|research|evaluation|"
    r"analysis|approach|method|model|system|dataset|corpus|design|implementation)|the present|"
    r"the current|the proposed|the (?:model|method|approach|system|framework|algorithm|tool|"
    r"package|dataset|corpus|study|evaluation)|{names})"
)
_OTHERS = re.compile(
    r"\b(?:previous|prior|earlier|existing|other|recent|current|traditional|conventional|"
    r"classical|standard)\s+(?:\w+\s+)?(?:work|works|research|studies|methods|approaches|models|"
    r"systems|corpora|datasets|literature|techniques|generative models)\b|\bet al\.",
    _I,
)
# Each: a pattern, and where the paper's own subject must stand: anywhere in the sentence
# ("sentence"), in the few words before the match ("before": "the model struggles", not "those
# which fail"), or nowhere ("none"). Strongest first.
_LIMIT_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        r"\b(?:a|one|another|the main|the major|a major|an important|a key|the key|a further|"
        r"a potential|a possible|several|two|three|some)\s+(?:\w+\s+)?limitations?\s+(?:of|is|was|"
        r"are|to|in|concerns?|that|which)\b",
        "sentence",
    ),
    (r"\blimitations? of (?:this|our|the present|the current|the proposed)\b", "none"),
    (
        r"\b(?:note|acknowledge|discuss|recogni[sz]e|mention|consider) (?:its|our|the|some|several|"
        r"a few|two|three) (?:main |key |major |potential |important )?limitations\b",
        "none",
    ),
    (r"\bis not without (?:its|their) limitations\b", "before"),
    (
        r"\b(?:is|are|was|were|remains?)\s+(?:still\s+|currently\s+|also\s+|further\s+|so far\s+)?"
        r"(?:limited|restricted|confined)\b",
        "before",
    ),
    (
        r"\b(?:may|might|could|does|do|did) not (?:generali[sz]e|hold|apply|transfer|scale|extend)"
        r"\b|\b(?:cannot|can ?not|could not) (?:be )?generali[sz]ed?\b",
        "before",
    ),
    (
        r"\b(?:too|overly) (?:simple|small|coarse|restrictive|narrow|slow|costly|expensive|few)\b",
        "before",
    ),
    (
        r"\bwe (?:were|are) (?:not able|unable) to\b|\bwe could not\b|\bwe did not (?:measure|"
        r"collect|test|evaluate|assess|specify|control|include|consider|study|examine|have)\b",
        "none",
    ),
    (
        r"\b(?:might|may|could) (?:have )?(?:possibly )?(?:be |been )?(?:skewed|biased|affected|"
        r"obscured|inflated|confounded|underestimated|overestimated|yielded different)\b|"
        r"\bcannot be ruled out\b",
        "none",
    ),
    # "only a single run" thins the evidence; "models with only a single term" is a design.
    (
        r"\bonly (?:a )?(?:small|few|limited)\b|\bonly (?:a single|one) (?:\w+ )?(?:runs?|seeds?|"
        r"datasets?|data sets?|sites?|cluster|company|team|project|language|domain|benchmark|"
        r"annotator|rater|participant|hospital|school|country|population|sample|trial|"
        r"experiment|study|machine|model run)\b|\ba small[- ](?:scale )?(?:study|sample|"
        r"evaluation|experiment)\b|\bsmall sample\b",
        "before",
    ),
    # A shortcoming *of* the paper's own work, or one its work *has*; "the study revealed
    # shortcomings in the registers" is a finding about what it studied.
    (
        r"\b(?:shortcomings?|drawbacks?|weakness(?:es)?|caveats?|failure (?:cases|modes)) of "
        r"(?:the |this |our |the proposed |the present )(?:\w+ ){0,2}(?:model|method|approach|"
        r"system|study|work|design|evaluation|analysis|algorithm|framework|tool|dataset|corpus)\b|"
        r"\b(?:has|have|had|suffers? from|shows?|exhibits?) (?:a |an |some |several |one |two |"
        r"important |major |main |known )*(?:shortcomings?|drawbacks?|weakness(?:es)?|caveats?)\b",
        "sentence",
    ),
    (
        r"\b(?:struggles?|struggling|fails? to|unable to|performs? poorly|less competitive|"
        r"does not (?:perform|work|improve|help)|is imperfect)\b",
        "before",
    ),
)
_WITHHELD_LIMITS = frozenset({7, 8, 9})
"""The patterns of :data:`_LIMIT_PATTERNS` that a sentence outside a Limitations heading
cannot rest a limit on: "we could not" (often a finding), a hedge ("may be biased": a
Discussion's caution) and "only a single ..." (often a design). The others name the work's
limit ("a limitation of this study", "our model is limited", "DPR is unable to")."""
_FINDINGS = re.compile(r"\b(?:findings|results|conclusions|performance|estimates)\b", _I)
_MITIGATION = re.compile(
    r"^(?:To|In order to) (?:minimi[sz]e|reduce|account|control|avoid|rule out|"
    r"address|mitigate|limit|establish|ensure|improve|increase|enhance|strengthen|guarantee|"
    r"assess|check|verify|validate|confirm)\b",
    re.IGNORECASE,
)
_NOT_OWN_LIMIT = re.compile(
    r"\b(?:limitations?|shortcomings?|drawbacks?|weakness(?:es)?) of (?!(?:this|our|the "
    r"present|the current|the proposed)\b)(?:the |a |an )?(?:\w+\s+){0,3}"
    r"(?:research|work|studies|methods?|approaches|models|systems|corpora|scheduling|"
    r"techniques|generative models|text generation)",
    _I,
)
# A heading or run-in paragraph head that announces limits: "Limitations", "4.2 Threats to
# Validity", "External Validity." (how software-engineering papers set out their threats); a
# line-numbered manuscript glues the line's number onto it ("2.3.4. Limitations260").
# Under a Limitations or Threats heading, what marks a sentence that states a limit: a
# hedge, a lack, a past "did not"; a present "it does not rely on ..." defends the work.
_STATES_LIMIT = re.compile(
    r"\b(?:cannot|can ?not|(?:did|were|was|could|have|has|had) not|only|would benefit|could|"
    r"may|might|limit\w*|lack\w*|unable|difficult|bias\w*|restrict\w*|threats?|although|"
    r"though|small|few|underpowered|cautio\w*|generali[sz]ab\w*|"
    r"(?:does|do) not (?:include|support|handle|provide|cover|implement|offer|"
    r"have|allow|scale|account))\b",
    _I,
)
_ANSWERS_THREAT = re.compile(
    r"^However,? (?:this|these|it|that) (?:reflects?|is|was|does|did|has|mirrors?)\b|"
    r"\b(?:mitigat|alleviat)\w*|\bnot (?:intrinsic|inherent|fundamental)\b|"
    # "... could further strengthen the validity" proposes work; it states no limit.
    r"\bcould (?:further )?(?:strengthen|improve|enhance|increase|extend|broaden)\b",
    _I,
)
_LIMITS_HEADING = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?\s+|[IVX]+\.\s+|[A-Z]\.\s+)?(?:study\s+|strengths and\s+)?"
    r"(?:limitations?|threats to (?:the )?validity|(?:internal|external|construct|conclusion|"
    r"statistical conclusion) validity)(?:\s+(?:and\s+(?:future\s+(?:work|"
    r"directions?|research)|outlook|perspectives|strengths|threats to (?:the )?validity|"
    r"conclusions?|discussion)|"
    r"of\s+(?:the|this|our)\s+(?:study|work|approach|research|analysis|paper|method|"
    r"evaluation)))?(?<=[a-z])\d{0,4}\s*(?=[.:—–-]|$)",
    _I,
)
_LATER = re.compile(
    # "We aim to ..." is this paper's aim unless a time to come follows it.
    r"\b(?:we (?:plan|intend) to|we (?:hope|aim) to\b[^.;]{0,80}?\b(?:in (?:the )?future|later|"
    r"next|in (?:a )?follow-up)|(?:in|for|as) future (?:work|research|studies)|"
    r"future (?:work|research|studies|directions?) (?:will|would|could|should|may|might|"
    r"includes?)|"
    r"is left (?:for|to) future|left for future|remains? (?:an )?open (?:question|problem)|"
    r"not yet|not currently|cannot currently|not (?:\w+ )?(?:implemented|supported|available|"
    r"released) yet|will be (?:released|added|tagged|addressed|explored|investigated|studied) "
    r"(?:in|on|at|later|so)|(?:an )?interesting (?:direction|point) for future|further "
    r"(?:research|work|investigation|study|studies) (?:is|are) (?:needed|required|warranted|"
    r"desirable)|require[sd]? further investigation|future studies (?:\w+ ){0,6}are desirable|"
    r"could benefit from)\b",
    _I,
)
_RELEASE_PURPOSE = re.compile(
    r"\b(?:release|share|open-source|publish|make)\w*\b[^.]*\bfor (?:future|further) research",
    _I,
)
_ROADMAP = re.compile(r"\b(?:Sections?|Chapters?|§)\s*\d|\bin the following section", _I)


_ANNOUNCES = re.compile(
    r"\blimitations?\s*[.:]?\s*$|\blimitations? (?:are|is) (?:discussed|"
    r"described|listed|as follows)|\blimitations?,? (?:that|which) (?:should|must|need to|"
    r"have to) be (?:considered|noted|acknowledged|borne in mind|kept in mind|mentioned|taken "
    r"into account)",
    _I,
)


def _next_in_section(sentences: Sequence[Sentence], sentence: Sentence) -> Sentence | None:
    at = next(i for i, s in enumerate(sentences) if s is sentence)
    following = sentences[at + 1] if at + 1 < len(sentences) else None
    return following if following is not None and following.section is sentence.section else None


def _own_subject(names: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names)) or "(?!)"
    return re.compile(rf"\b{_OWN_SUBJECT.format(names=alternatives)}\b", _I)


def _under_limits_heading(sentence: Sentence) -> bool:
    return bool(_LIMITS_HEADING.match(sentence.section.title.strip().rstrip(".:")))


def stated_limits(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Sentences where the paper states a limit of its own work, strongest evidence first."""
    own = _own_subject(names)
    found: list[tuple[int, Evidence]] = []
    for s in sentences:
        if _under_limits_heading(s) and not _OTHERS.search(s.text):
            # A sentence that only works a number out ("the median width is then 0.195") or
            # says what was done illustrates, one that answers a threat ("However, this
            # reflects ...", "To establish validity, we ...") mitigates; a hedge, a negation or
            # a lack states a limit.
            answers = _MITIGATION.match(s.text) or _ANSWERS_THREAT.search(s.text)
            if _STATES_LIMIT.search(s.text) and not answers:
                found.append((-1, Evidence(s, 0, len(s.text), "under a Limitations heading")))
            continue
        if introductory(s) or _NOT_OWN_LIMIT.search(s.text) or _ROADMAP.search(s.text):
            continue
        if cites_others(s.text) and not re.search(r"\b(?:we|our)\b", s.text, _I):
            continue
        if _MITIGATION.match(s.text):
            continue
        # Outside a Limitations heading, only a sentence that names the limit as the work's
        # own (see _WITHHELD_LIMITS).
        for strength, (pattern, subject) in enumerate(_LIMIT_PATTERNS):
            m = re.search(pattern, s.text, _I)
            if m is None or strength in _WITHHELD_LIMITS:
                continue
            # The clause the match stands in: "and DPR is unable to", not "(iv) those which fail".
            clause = re.split(
                r"[,;:()]|\b(?:while|whereas|although|though|but|because|since|when|if|than)\b",
                s.text[: m.start()],
            )[-1]
            # "insights about how motivation might be affected": an indirect question asks about
            # what was studied, it states no limit of the work.
            # A hedge only: "how effective ... given that the data are a small sample" still
            # states one.
            hedge = re.match(r"(?:might|may|could)\b", m.group(0), _I)
            if hedge and re.search(r"\b(?:how|whether|why)\b", clause, _I):
                continue
            if (
                (subject == "sentence" and not own.search(s.text))
                or (subject == "before" and not own.search(clause))
                or (subject == "findings" and not (own.search(s.text) or _FINDINGS.search(s.text)))
            ):
                continue
            if _OTHERS.search(s.text[: m.start()]) and not re.search(r"\b(?:we|our)\b", s.text):
                continue
            if _ANNOUNCES.search(s.text):
                # "X is not without its limitations." says nothing yet: the next sentence does.
                following = _next_in_section(sentences, s)
                if following is not None:
                    found.append((strength, Evidence(following, 0, len(following.text), "")))
                break
            found.append((strength, Evidence(s, m.start(), m.end(), m.group(0))))
            break
    found.sort(key=lambda pair: pair[0])  # stable: the paper's order within one strength
    return [e for _, e in found]


def left_for_later(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Sentences where the paper says what it has not done yet or leaves to future work."""
    found = []
    for s in sentences:
        m = _LATER.search(s.text)
        if m is None or introductory(s) or _ROADMAP.search(s.text):
            continue
        if _RELEASE_PURPOSE.search(s.text) or (
            cites_others(s.text) and not re.search(r"\b(?:we|our)\b", s.text, _I)
        ):
            continue
        found.append(Evidence(s, m.start(), m.end(), m.group(0)))
    return found


def limitations_heading(paper: Paper) -> str | None:
    """The heading (or run-in paragraph head) that announces the paper's limitations, or None
    when neither its outline nor any line of its text has one."""
    for section in paper.sections:
        if _LIMITS_HEADING.match(section.title.strip().rstrip(".:")):
            return section.heading
    for page in paper.pages:
        for line in page.splitlines():
            line = line.strip()
            m = _LIMITS_HEADING.match(line)
            # A heading line, or a paragraph that opens "Limitations. ..." / "Limitations: ...".
            if m:
                return line[: m.end()].strip()
    return None


MAX_STRENGTHS = 5
"""At most this many strengths."""
MAX_WEAKNESSES = 3
"""At most this many weaknesses (each with its suggestion)."""

OFFLINE_REVIEW_NOTE = (
    "Heuristic offline review: rules over the paper's text, without a language model. It states "
    "only what the rules can check in the paper's own words, each point quoting the paper as "
    '(p.N) "..."; it does not judge the science. For a model\'s review, run with --llm openai and '
    "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server)."
)
"""The header of an offline ``review.txt``."""

_AIM = re.compile(
    r"\b(?:we (?:propose|present|introduce|show|study|examine|investigate|describe|argue|develop|"
    r"sought|aim)|(?:this|the present) (?:paper|study|work|article|thesis) [a-z]+s\b|the (?:aim|"
    r"objective|purpose|goal) of (?:this|the present)|in this (?:paper|work|study|thesis|"
    r"article))\b",
    re.IGNORECASE,
)


_MATH = re.compile(r"[=≤≥∑∏∫∈⊂⊆∀∃∇∂√θαβγλσμ⊤→←∼~·]")


def prose(sentence: Sentence) -> bool:
    """True for a sentence worth quoting: prose, not a caption, a table row, a list of bullets
    or a formula."""
    text = sentence.text
    words = text.split()
    if not 6 <= len(words) <= 80 or not (text[0].isupper() or text[0].isdigit()):
        return False
    if re.match(r"^(?:\(?[A-Za-z]\)|Fig(?:ure)?\.?\s*\d|Table\s+\w+|Source:|Fonte:)", text):
        return False
    # Statistics in parentheses ("(hazard ratio = 0.97, 95% CI ...)") are prose; formulas not.
    outside = re.sub(r"\([^()]*\)", "", text)
    symbols = sum(unicodedata.category(c) == "Sm" for c in outside if c not in "+<>=")
    if "•" in text or len(_MATH.findall(outside)) >= 2 or symbols >= 2 or "||" in text:
        return False
    if symbolic(text):
        return False
    visible = [c for c in text if not c.isspace()]
    if sum(c.isalpha() for c in visible) < 0.7 * len(visible):
        return False
    return sum(any(c.isdigit() for c in w) for w in words) <= 0.3 * len(words)


def _english(text: str) -> bool:
    return english_share(text) >= ENGLISH_SHARE


@dataclass(frozen=True)
class _Reading:
    """What the reviewer found in a paper before it writes a point."""

    sentences: list[Sentence]
    names: frozenset[str]
    kind: KindEvidence
    aim: Sentence | None
    english: bool


def _own_sections(paper: Paper) -> set[int]:
    """The ids of the sections that hold the paper's own work: not related work, background or
    back matter, nor a sub-section of one ("2.1" under "2 Related work")."""
    own: set[int] = set()
    others: list[str] = []
    for section in paper.sections:
        number = re.match(r"^(\d+(?:\.\d+)*)\.?\s", section.heading)
        inside = number is not None and any(number.group(1).startswith(f"{n}.") for n in others)
        if not own_section(section) or inside:
            if number is not None:
                others.append(number.group(1))
            continue
        own.add(id(section))
    return own


def _read(paper: Paper) -> _Reading:
    sentences = [s for s in paper_sentences(paper, PageKeys.of(paper.pages)) if prose(s)]
    own_ids = _own_sections(paper)
    own = [s for s in sentences if id(s.section) in own_ids]
    names = own_names(paper, own)
    english = _english(paper.text)
    aim = next((s for s in own if _AIM.search(s.text) and in_abstract(s)), None) or next(
        (s for s in own[:80] if _AIM.search(s.text)), None
    )
    if english:
        kind = paper_kind(paper, own, measured=bool(results(own, names)))
    else:
        kind = KindEvidence(
            None, None, "the rules read English prose, which too few of its words are"
        )
    return _Reading(own, names, kind, aim, english)


def _strengths(r: _Reading) -> list[str]:
    """Points that each rest on evidence of their kind, the main result first."""
    out: list[str] = []
    used: list[Sentence] = []

    def add(evidence: Evidence | None, text: str) -> None:
        if evidence is not None and len(out) < MAX_STRENGTHS:
            out.append(f"{text}: {evidence.cite()}.")
            used.append(evidence.sentence)

    s = r.sentences
    compared = comparisons(s, r.names)
    result = first(results(s, r.names))
    if result is not None:
        against = next((c.detail for c in compared if c.sentence is result.sentence), None)
        detail = f"{result.detail}, against {against}" if against else result.detail
        add(result, f"Reports a result with its number ({detail})")
    spread = first(spreads(s, r.names))
    add(spread, f"Gives the spread or a test of a result ({spread.detail})" if spread else "")
    other = first(compared, used)
    add(other, f"Compares its result with {other.detail}" if other else "")
    release = first(releases(s, r.names))
    if release is not None:
        what = _released_what(release.sentence.text)
        add(release, f"Says where its {what} {_verb(what)} available ({release.detail})")
    sample = first(samples(s, r.names))
    add(sample, f"States its sample ({sample.detail})" if sample else "")
    return out


def _released_what(text: str) -> str:
    found = re.findall(r"\b(code|data|software|models?|implementation)\b", text, re.IGNORECASE)
    words = list(dict.fromkeys(w.lower() for w in found))
    return " and ".join(words[:2]) or "work"


def _verb(what: str) -> str:
    return "are" if " and " in what or what.endswith("s") else "is"


def _weaknesses(r: _Reading, paper: Paper) -> list[tuple[str, str]]:
    """(weakness, suggestion) pairs from the paper's own words and facts of its structure."""
    pairs: list[tuple[str, str]] = []
    limits = stated_limits(r.sentences, r.names)[:2]
    for limit in limits:
        cite = limit.cite()
        pairs.append(
            (
                f"The paper states a limit of its own work: {cite}.",
                f"Say how much the limit it states, {cite}, bears on its main result, and test "
                "it where the data allow.",
            )
        )
    quoted = {id(e.sentence) for e in limits}
    later = _standing_alone(
        [e for e in left_for_later(r.sentences, r.names) if id(e.sentence) not in quoted]
    )
    if later is not None:
        cite = later.cite()
        pairs.append(
            (
                f"The paper leaves for later: {cite}.",
                f"Report a first result on what it leaves for later, {cite}, or say what "
                "stands in the way.",
            )
        )
    heading = limitations_heading(paper) if not pairs else None
    if heading is not None:
        # A run-in "Limitations. Our sample ..." paragraph the section list does not show.
        opening = _opening_after(heading, paper, r.sentences)
        if opening is not None:
            cite = opening.cite()
            pairs.append(
                (
                    f"The paper states a limit of its own work: {cite}.",
                    f"Say how much the limit it states, {cite}, bears on its main result, and "
                    "test it where the data allow.",
                )
            )
    elif not pairs:
        anchor = _closing_anchor(r.sentences)
        if anchor is not None:
            cite = anchor.cite()
            pairs.append(
                (
                    "No section or paragraph is headed 'Limitations' or 'Threats to validity' "
                    f"(headings and paragraph openings searched); the closing part opens {cite}.",
                    f"Gather the limits of the work under a Limitations heading near {cite}.",
                )
            )
    return pairs[:MAX_WEAKNESSES]


def _opening_after(heading: str, paper: Paper, sentences: Sequence[Sentence]) -> Sentence | None:
    """The sentence a run-in heading opens ("Limitations. Only volunteers took part ...")."""
    for page in paper.pages:
        at = page.find(heading)
        if at < 0:
            continue
        words = page[at + len(heading) :].lstrip(" .:—–-\n").split()[:6]
        start = " ".join(words)
        found = next((s for s in sentences if s.text.startswith((heading, start)) and start), None)
        if found is not None and _ANNOUNCES.search(found.text):
            # "Limitations and Conclusion This study has several limitations." says nothing
            # yet: the sentence after it states the limit.
            return _next_in_section(sentences, found)
        if found is not None:
            return found
    return None


def _standing_alone(evidence: Sequence[Evidence]) -> Evidence | None:
    """The first piece of evidence whose sentence does not open on "This" or "It" (which would
    leave the reader asking what it is), else the first."""
    alone = (e for e in evidence if not re.match(r"(?:This|These|That|It|They)\b", e.sentence.text))
    return next(alone, None) or next(iter(evidence), None)


def _closing_anchor(sentences: Sequence[Sentence]) -> Sentence | None:
    """The closing part's first sentence (not an authors' note that a PDF ran into it)."""
    body = [s for s in sentences if debris_kind(s.text) is None]
    closing = [s for s in body if re.search(r"conclu|discussion", s.section.name)]
    return closing[0] if closing else (body[-1] if body else None)


def _nothing_checkable(r: _Reading) -> tuple[str, str, str] | None:
    """A strength, weakness and suggestion that say the rules found nothing they can check,
    each quoting the paper's statement of its aim (or its first sentence)."""
    anchor = r.aim or next(iter(r.sentences), None)
    if anchor is None:
        return None
    cite = anchor.cite()
    why = (
        "too few of the paper's words read as English prose for them"
        if not r.english
        else "the rules found no statement of its own limits or unfinished work"
    )
    return (
        f"States its aim: {cite}.",
        f"The offline rules read English phrasing and state no weakness they cannot check: {why}; "
        f"a reader should weigh {cite} against its evidence.",
        f"For a judgement of {cite} that the offline rules cannot give, review the paper with a "
        "language model (--llm openai).",
    )


def offline_review(paper: Paper) -> Review:
    """A review whose every point quotes ``paper`` with its page; deterministic."""
    r = _read(paper)
    strengths = _strengths(r) if r.english else []
    pairs = _weaknesses(r, paper) if r.english else []
    fallback = _nothing_checkable(r)
    if fallback is not None:
        if not strengths:
            strengths = [fallback[0]]
        if not pairs:
            pairs = [(fallback[1], fallback[2])]
    return Review.model_construct(
        strengths=strengths,
        weaknesses=[w for w, _ in pairs],
        suggestions=[s for _, s in pairs],
        dropped=[],
        kind=r.kind.describe(),
    )


def _no_usage() -> Usage:
    return {"input_tokens": 0, "output_tokens": 0}


class OfflineEngine:
    """:class:`~sagagraph.agents.engine.PaperEngine` without a model; usage is always zero."""

    name = "offline"

    def __init__(self, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        self.chunk_chars = chunk_chars
        """Characters per chunk when summarising a long paper."""

    def __repr__(self) -> str:
        return f"OfflineEngine(chunk_chars={self.chunk_chars})"

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        """Find each required part by its heading; list what is missing."""
        return validation_report(paper), _no_usage()

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        """Strengths, weaknesses and suggestions, each naming the paper's sections or counts."""
        return offline_review(paper), _no_usage()

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        """An extractive summary of exactly ``words`` words; PaperTooShortError if too short."""
        return Summary(text=offline_summary(paper, words, chunk_chars=self.chunk_chars)), (
            _no_usage()
        )
