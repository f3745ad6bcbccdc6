"""What a weakness rests on: the paper's own words about its limits, and facts of its structure.

The offline reviewer never says that a paper does not discuss its limits: a keyword search
cannot know that (a paper may call its model "too simple" without the word "limitation"). It
quotes what the paper says of itself instead, and otherwise states only a fact it checked:

- :func:`stated_limits`: sentences where the paper names a limit of its own work, strongest
  first: "a limitation of this study", "our evaluation is limited to", "may not generalize",
  "too simple", "we were not able to", "only a small number of", "might have skewed", a
  shortcoming or failure of its own model, and any sentence under a Limitations heading. A
  sentence about others' work ("limitations of previous research") is none;
- :func:`left_for_later`: what it says it has not done yet ("not implemented yet", "we plan
  to", "future work", "further research is needed");
- :func:`limitations_heading`: whether a section or a paragraph is headed Limitations (or
  Threats to validity), searched in the outline and in every line of the text, so that a
  review may say "no section or paragraph is headed Limitations" as the fact it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_sentences import Sentence, cites_others
from sagagraph.agents.practices import Evidence, introductory

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
        r"are|to|in|concerns?)\b",
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
        r"\b",
        "findings",
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
    (
        r"\bonly (?:a )?(?:small|few|limited|single)\b|\ba small[- ](?:scale )?(?:study|sample|"
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
_FINDINGS = re.compile(r"\b(?:findings|results|conclusions|performance|estimates)\b", _I)
_MITIGATION = re.compile(
    r"^(?:To|In order to) (?:minimi[sz]e|reduce|account|control|avoid|rule out|"
    r"address|mitigate|limit)\b",
    re.IGNORECASE,
)
_NOT_OWN_LIMIT = re.compile(
    r"\b(?:limitations?|shortcomings?|drawbacks?|weakness(?:es)?) of (?!(?:this|our|the "
    r"present|the current|the proposed)\b)(?:the |a |an )?(?:\w+\s+){0,3}"
    r"(?:research|work|studies|methods?|approaches|models|systems|corpora|scheduling|"
    r"techniques|generative models|text generation)",
    _I,
)
_LIMITS_HEADING = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?\s+|[IVX]+\.\s+|[A-Z]\.\s+)?(?:study\s+|strengths and\s+)?"
    r"(?:limitations?|threats to (?:the )?validity)(?:\s+(?:and\s+(?:future\s+(?:work|"
    r"directions?|research)|outlook|perspectives|strengths|threats to (?:the )?validity)|"
    r"of\s+(?:the|this|our)\s+(?:study|work|approach|research|analysis|paper|method|"
    r"evaluation)))?\s*(?=[.:—–-]|$)",
    _I,
)
_LATER = re.compile(
    r"\b(?:we (?:plan|intend|hope|aim) to|(?:in|for|as) future (?:work|research|studies)|"
    r"future (?:work|research|studies|directions?) (?:will|could|should|may|might|includes?)|"
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
    r"described|listed|as follows)",
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
            found.append((-1, Evidence(s, 0, len(s.text), "under a Limitations heading")))
            continue
        if introductory(s) or _NOT_OWN_LIMIT.search(s.text) or _ROADMAP.search(s.text):
            continue
        if cites_others(s.text) and not re.search(r"\b(?:we|our)\b", s.text, _I):
            continue
        if _MITIGATION.match(s.text):
            continue
        for strength, (pattern, subject) in enumerate(_LIMIT_PATTERNS):
            m = re.search(pattern, s.text, _I)
            if m is None:
                continue
            # The clause the match stands in: "and DPR is unable to", not "(iv) those which fail".
            clause = re.split(
                r"[,;:()]|\b(?:while|whereas|although|though|but|because|since|when|if|than)\b",
                s.text[: m.start()],
            )[-1]
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
