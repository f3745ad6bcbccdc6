"""What a sentence must be to stand in an extractive summary: whole prose that makes sense alone.

:func:`clean_text` takes out what a summary reader cannot use: citation markers, footnote marks
glued to words, a pointer in parentheses ("(Table 2)", "(see Figure 3)"), the label of a
structured abstract ("Results:"). :func:`usable` then refuses PDF debris (:func:`debris_kind`:
captions, running heads, copyright lines, affiliations, pseudo-code, equations, reference
fragments, headings glued to a sentence, flattened superscripts, bullets, authors' roles) and
the sentences issue 37 found in summaries, which lean on what the summary leaves out:

- a roadmap: "In Section 4, we show ...", "The rest of this paper ...", "We discuss this later";
- a pointer to a figure or table: "As shown in Table 2, ...", "Figure 3 shows ...";
- a dangling "this": "In this setting, ...", "This shows ...", "To address this problem, ...".

:func:`usable_result` admits the main result a little more widely (its statistics in
parentheses, "hazard ratio = 0.97", and an opening number, "64 known metabolites ...") so the
summary can carry the number.
"""

from __future__ import annotations

import re

from sagagraph.agents.words import longest_unknown

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
        r"\b(?:is|are) illustrating\b|\(\w[\w ]{0,30}: [^()]{1,80}\)",
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


def usable_result(sentence: str) -> bool:
    """:func:`usable` for the sentence that carries the main result: its statistics in
    parentheses are no formula, it may open on its number, and it may run to 70 words."""
    masked = _STATISTICS.sub("(statistics)", sentence)
    if not _shape(sentence, 70, masked) or debris_kind(masked) is not None:
        return False
    return sentence[0].isupper() or sentence[0].isdigit()
