"""What a strength rests on: a paper's own sentences, each with the section and page it is printed
on, and evidence of its kind found in them, never a keyword.

The offline reviewer quotes the paper for every point it makes, so it reads the paper as
sentences it can cite: :func:`paper_sentences` splits every section (appendices included,
the reference list, acknowledgements and keyword lists left out) into sentences and finds the
page each one is printed on. :func:`about_own_work` tells a sentence about the paper's own work
("we", "our", "this study", or a sentence of its method or results) from one that reviews
others' work, and :func:`negated` a keyword the sentence denies ("does not allow for
statistically significant generalisation").

Each finder returns :class:`Evidence`: the sentence, the span that is the evidence (so the
review can quote it), and the detail a reader wants (the number, the spread, the compared
system, the location). What counts as a result, a spread, a comparison, a release and a sample,
and what does not, is the table of docs/reviewer.md (issue 37). A sentence that cites others
(``[12]``, ``(Smith et al., 2020)``) describes their work and is no evidence of the paper's,
unless it speaks in the first person.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, Section, fold_lines
from sagagraph.agents.reply_checks import PageKeys
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
_CITATION = re.compile(
    r"\[\d{1,3}(?:\s?[,–-]\s?\d{1,3})*\]|\([A-Z][^()]{0,60}\b(?:19|20)\d\d[a-z]?\)|"
    r"\[[A-Z][^\]]{0,80}\b(?:19|20)\d\d[a-z]?\]|\[(?:19|20)\d\d[a-z]?\]|\bet al\.|"
    # A narrative citation: "Wiernik & Dahlke (2020) reported", "Smith (2019) found".
    r"\b[A-Z][a-z][\w'’-]*(?:,? (?:&|and) [A-Z][a-z][\w'’-]*)? \((?:19|20)\d\d[a-z]?\)"
)


@dataclass(frozen=True)
class Sentence:
    """A sentence of the paper, with where it is printed."""

    text: str
    """The sentence, whitespace folded, as printed (citations kept)."""
    section: Section
    page: int
    """1-based page the sentence is printed on (its start)."""
    parent: str = ""
    """The name of the top-level section a sub-section's sentence stands in (``results`` for
    one of "4.2 Accuracy"), empty for a top-level section's."""

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


def cites_others(text: str) -> bool:
    """True when the sentence cites other work (``[12]``, ``(Smith et al., 2020)``): it
    then describes that work, not the paper's own."""
    return bool(_CITATION.search(text))


def paper_sentences(paper: Paper, keys: PageKeys | None = None) -> list[Sentence]:
    """Every sentence of the paper's sections, in reading order, with its page.

    The reference list is left out (its entries are not the paper's statements); a sentence
    whose page cannot be found (a PDF that prints it garbled) is left out too, since it could
    not be quoted.
    """
    keys = keys or PageKeys.of(paper.pages)
    references = paper.references_section()
    out: list[Sentence] = []
    top = ""
    for section in paper.sections:
        parent = top if section.level > 1 else ""
        top = section.name if section.level <= 1 else top
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
            out.append(Sentence(text, section, found, parent))
    return out


_I = re.IGNORECASE


@dataclass(frozen=True)
class Evidence:
    """A span of a sentence that is evidence of one kind, and the detail it gives."""

    sentence: Sentence
    start: int
    end: int
    detail: str
    """What a reader wants from it: ``28.4``, ``± 0.74``, ``BM25``, ``github.com/x/y``."""

    def cite(self) -> str:
        """``(p.N) "..."`` quoting the sentence so that the span shows."""
        return self.sentence.cite_span(self.start, self.end)


# -- where a sentence stands -------------------------------------------------------------------

_INTRO = re.compile(
    r"^(?:introduction|motivation|background|overview|problem statement|research questions?|"
    r"purpose|objectives?|related|prior|literature|preliminar|significance|scope)"
)
_ABSTRACT = re.compile(r"^(?:abstract|summary|resum)")
_CLOSING = re.compile(r"conclu|discussion|summary of|final remarks|closing|outlook")
_FIRST_PERSON = re.compile(r"\b(?:we|our|ours|us)\b", _I)


def introductory(sentence: Sentence) -> bool:
    """True for a sentence of the introduction or background, where papers describe the field."""
    return bool(_INTRO.search(sentence.section.name))


def in_abstract(sentence: Sentence) -> bool:
    return bool(_ABSTRACT.search(sentence.section.name))


def in_closing(sentence: Sentence) -> bool:
    return bool(_CLOSING.search(sentence.section.name))


# Where a paper states its own findings and how it got its data (docs/reviewer.md). A point
# rests on a body sentence only when the sentence stands in such a place: a mechanism, a
# plotting step or another study's number in a background paragraph is withheld, since the
# rules cannot tell it from a result there.
_RESULTS_PLACE = re.compile(
    r"^(?:abstract|summary|resum)|result|evaluat|experiment|finding|conclu|benchmark|"
    r"performance|case stud|empirical|validation"
)
_METHODS_PLACE = re.compile(
    r"^(?:abstract|summary|resum)|method|material|data\b|datasets?\b|^participants|^subjects|"
    r"^(?:the )?sample|sampling|design|procedure|set-?up|corpus|collection|population|"
    r"recruit|cohort|study (?:area|site)|protocol"
)
_FINDINGS_PLACE = re.compile(r"result|finding")
_OWN_WORK = re.compile(
    r"\b(?:we|our|ours|us)\b|\b(?:this|the present|the current|the proposed) (?:study|work|"
    r"paper|article|method|model|approach|system|analysis|thesis|project|research|"
    r"framework|algorithm|tool|technique|dataset|corpus|evaluation|experiment|survey)\b",
    _I,
)


def in_results_place(sentence: Sentence) -> bool:
    """True for a sentence of the abstract, a results, evaluation or experiments section, or
    the conclusion: where a paper states what its own work found."""
    return any(_RESULTS_PLACE.search(n) for n in (sentence.section.name, sentence.parent))


def in_methods_place(sentence: Sentence) -> bool:
    """True for a sentence of the abstract or a methods, data or participants section: where
    a paper states what its data are."""
    where = (sentence.section.name, sentence.parent)
    if any(_FINDINGS_PLACE.search(n) for n in where):
        return False
    return any(_METHODS_PLACE.search(n) for n in where)


def speaks_for_paper(sentence: Sentence) -> bool:
    """True for a sentence of the abstract or the conclusion, which state the paper's own
    findings whatever their grammatical subject."""
    return in_abstract(sentence) or "conclu" in sentence.section.name


def names_own_work(text: str, names: frozenset[str]) -> bool:
    """True when ``text`` names the paper's own work as such: first person, "this study",
    "the proposed method", or a name the paper gives its work (its title's head)."""
    if _OWN_WORK.search(text):
        return True
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names)


# "We propose a new simple network architecture, the Transformer, ...", "we introduce
# Multi-LexSum, a collection ...": the name a contribution sentence gives the work.
_NAMED_CONTRIBUTION = re.compile(
    r"\bwe (?:propose|present|introduce|develop|release|call it|name it)\b[^.]{0,60}?"
    r"(?:,\s*(?:the\s+)?|\bcalled\s+|\bnamed\s+|\bdubbed\s+)([A-Z][\w-]+)|"
    r"\bwe (?:introduce|present|propose|release)\s+([A-Z][\w-]*[A-Z0-9][\w-]*)"
)


_PROPOSED_THING = re.compile(
    r"\b[Ww]e (?:propose|present|introduce|develop|design|describe|build)\s+(?:an?|the)\s+"
    r"(?:new\s+|novel\s+|simple\s+|general\s+)?([a-z][\w-]+\s+[a-z][\w-]+(?:\s+[a-z][\w-]+)?)"
    r"(?=\s+(?:for|to|that|which|based|in|with|of|and|using|on)\b|[,.;:])"
)
_GENERIC_THING = re.compile(r"\b(?:study|paper|work|analysis|review|survey|overview)\b")


def own_names(paper: Paper, sentences: Sequence[Sentence]) -> frozenset[str]:
    """Names the paper gives its own work: the title's head before a colon (``Paper Plain``,
    ``S2ORC``) and an acronym it defines in the first person (``our Dense Passage Retriever
    (DPR)``)."""
    names: set[str] = set()
    head = paper.title.split(":", 1)[0].strip()
    if ":" in paper.title and 1 <= len(head.split()) <= 4:
        names.add(head)
    for s in sentences[:80]:
        if in_abstract(s):
            # "We propose a retry policy for ...": "retry policy" is then the paper's own.
            names.update(
                " ".join(m.group(1).split())
                for m in _PROPOSED_THING.finditer(s.text)
                if not _GENERIC_THING.search(m.group(1))
            )
        if _FIRST_PERSON.search(s.text):
            names.update(re.findall(r"\(([A-Z][A-Za-z0-9-]{1,12})\)", s.text))
            names.update(m.group(1) or m.group(2) for m in _NAMED_CONTRIBUTION.finditer(s.text))
        # "FIRA (ours)" in a table or an abstract names the paper's work.
        names.update(re.findall(r"\b([A-Z][\w-]{1,30})\s*\((?:ours|proposed)\)", s.text))
    return frozenset(n for n in names if len(n) >= 2)


def about_own(sentence: Sentence, names: frozenset[str]) -> bool:
    """True when the sentence speaks of the paper's own work: first person, "this study", a
    name the paper gives its work, or a sentence of its own results that cites no one."""
    text = sentence.text
    if _FIRST_PERSON.search(text) or re.search(
        r"\b(?:this|the present|the current|the proposed) (?:study|work|paper|method|model|"
        r"approach|system|analysis|thesis|project|research|dataset|corpus)\b",
        text,
        _I,
    ):
        return True
    if any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names):
        return True
    return not cites_others(text) and not introductory(sentence)


# -- results -------------------------------------------------------------------------------------

_PLAIN_WORD = re.compile(
    r"^[\"'“‘(\[]?[A-Za-z][A-Za-z0-9'’-]*[A-Za-z0-9][\"'”’)\].,;:!?/]*$|^(?:a|A|I)$"
)
_PLAIN_NUMBER = re.compile(r"^[(\[]?[-−+±~≈]?\$?\d[\d.,]*(?:\s?%|[KMBx×])?[)\].,;:%]*$")
_STATISTICS_ASIDE = re.compile(r"\([^()]*[=<>≤≥]\s*[-−+]?\d[^()]*\)")
SYMBOLIC_SHARE = 0.35
"""A "sentence" whose tokens are this share or more neither words nor numbers is no prose."""
SYMBOLIC_RUN = (8, 0.25)
"""So is one with this many such tokens that make this share: a figure's labels the PDF ran
into the prose sentence after them."""


def symbolic(text: str) -> bool:
    """True for a "sentence" that is mostly symbols, formula tokens or a figure's labels run
    together ("... .Mt+1 ... f(1) t+2(Mt+1) f(2) ... T T t+1:For ..."): the text a PDF gives
    for a drawing or an equation, which states nothing a review may quote as evidence.

    A token is plain when it is a word (letters, with digits or a hyphen inside: ``ResNet-50``,
    ``WMT14``) or a number (``28.4``, ``46%``); single letters other than "a" and "I",
    operators and tokens with brackets or symbols inside (``f(1)``, ``t+2(Mt)``) are not.
    """
    # A result's statistics in parentheses ("(μ = 3.67, σ = 1.78)") are prose, not symbols.
    tokens = _STATISTICS_ASIDE.sub(" ", text).split()
    if len(tokens) < 6:
        return False
    odd = [t for t in tokens if not _PLAIN_WORD.match(t) and not _PLAIN_NUMBER.match(t)]
    share = len(odd) / len(tokens)
    return (len(odd) >= 4 and share >= SYMBOLIC_SHARE) or (
        len(odd) >= SYMBOLIC_RUN[0] and share >= SYMBOLIC_RUN[1]
    )


# "While Tiresias achieves ...", "Gandiva et al. report ...", "Unlike BM25, which reaches ...":
# the subject of the sentence's first clause is another system or study.
_SUBORDINATE = r"(?:while|whereas|although|though|unlike|as|since|when|if|even though)"
_OTHERS_SUBJECT = re.compile(
    rf"^(?:(?P<sub>{_SUBORDINATE})\s+)?(?:(?i:the|a|an)\s+)?"
    r"(?P<name>(?-i:[A-Z][\w'’.+-]*)(?:\s(?-i:[A-Z][\w'’.+-]*)){0,2})"
    # "The FIFO scheduler (bottom row) achieves": a name, its kind, and an aside.
    r"(?:\s+(?:scheduler|system|model|baseline|policy|method|approach|algorithm|tool|library|"
    r"framework|engine|strategy|heuristic|network|classifier|solver)s?)?(?:\s*\([^()]{1,40}\))?"
    r"(?P<cited>\s+et al\.?|\s*\((?:19|20)\d\d[a-z]?\)|\s*\[\d{1,3}(?:[,–-]\s?\d{1,3})*\])?"
    r"\s+(?:also\s+|only\s+|still\s+|already\s+)?"
    r"(?:achiev|report|show|found|find|obtain|outperform|reach|attain|yield|scor|produc|"
    r"improv|reduc|cut|gets?\b|got\b|exhibit|demonstrat|observ|record|claim|result)",
    re.IGNORECASE,
)
_NOT_A_NAME = re.compile(
    r"^(?:we|our|this|these|that|those|it|its|they|their|results?|tables?|fig(?:ure)?s?\.?|"
    r"overall|finally|moreover|however|in|on|for|here|each|all|both|our|experiments?|"
    r"analys[ie]s|evaluation|data|study|model|method|approach|system|paper|work)$",
    re.IGNORECASE,
)


_BASELINE_SUBJECT = re.compile(
    r"(?:^|[,;:]\s*)(?:the|a|each|every|all)\s+(?:\w+\s+)?baselines?\s+(?:also\s+|still\s+)?"
    r"(?:achiev|report|show|obtain|outperform|reach|attain|yield|scor|produc|improv|reduc|"
    r"gets?\b|exhibit|perform)",
    re.IGNORECASE,
)


def of_another(text: str, names: frozenset[str]) -> bool:
    """True when the sentence states another named system's or study's result: its subject is
    a name the paper does not give its own work, cited ("Gandiva et al. report", "Smith (2019)
    found") or set in a subordinate clause ("While Tiresias achieves ..., it ..."), unless the
    main clause then turns to the paper's own work (", our policy achieves 9%")."""
    if _BASELINE_SUBJECT.search(text) and not _FIRST_PERSON.search(text):
        return True  # "..., the baseline achieves higher values"
    m = _OTHERS_SUBJECT.match(text)
    if m is None:
        return False
    name = m.group("name")
    first_word = name.split()[0]
    if _NOT_A_NAME.match(first_word) or name in names or first_word in names:
        return False
    if m.group("sub") is not None:
        main = text[m.end() :].split(",", 1)[1:]
        return not main or (
            not re.match(
                r"\s*(?:and\s+|but\s+|then\s+)?(?:we|our|the proposed|this (?:work|paper|method|"
                r"approach|system|model|policy|tool))\b",
                main[0],
                re.IGNORECASE,
            )
            and not any(main[0].strip().startswith(n) for n in names)
        )
    # A sentence that opens with a name: another's result when cited, or when the name is an
    # acronym or a compound (``BM25``, ``GPT-4``, ``Deep Speech``), not a capitalised opening
    # word ("Accuracy improved ...").
    return m.group("cited") is not None or bool(re.search(r"[A-Z0-9]", name[1:]))


_FINDING = re.compile(
    # "achieved by writing" is the means of a goal, not a result.
    r"\b(?:achiev(?:es|ed|ing)(?! (?:by|through|via|using|with)\b)(?![^.]{0,30}\bby \w+ing\b)|"
    r"outperform(?:s|ed|ing)?|surpass(?:es|ed)|"
    # "can be decreased to 0" says what is possible, not what was found.
    r"(?<!can be )(?<!could be )(?<!may be )(?<!might be )(?<!would be )(?<!should be )"
    # "we improved visibility by jittering": the means of a step, not a finding.
    r"(?:improv(?:es|ed)|reduc(?:es|ed)|increas(?:es|ed)|decreas(?:es|ed)|halv(?:es|ed)|"
    r"doubl(?:es|ed))(?![^.\d]{0,30}\bby \w+ing\b)|"
    r"(?:we|results?|analys[ie]s|experiments?|study|data|evaluation) (?:also )?(?:(?:show|showed|"
    r"shows|demonstrated?|confirm(?:s|ed)?|reveal(?:s|ed)?|indicated?|suggest(?:s|ed)?) that|"
    r"find|found|observed?)|showed|revealed|displayed|exhibited|yield(?:s|ed)|"
    r"reach(?:es|ed)? (?:\w+ ){0,2}\d+|"
    # "scored", "scores 28.4 BLEU", "scores higher"; not the noun ("the sum scores are set by").
    r"scored|scores (?:an? |the )?(?:[\w-]+ ){0,2}?(?:of )?[-−+]?\d|scores (?:\w+ )?(?:higher|"
    r"lower|better|worse|above|below)|attain(?:s|ed)|(?:is|was|were|are) (?:\w+ )?"
    r"(?:higher|lower|better|worse|faster|slower|larger|smaller|greater|more|less|fewer|similar|"
    r"comparable)(?= than\b| by\b| to\b| with\b|[,.;]| \(| in\b| on\b| for\b)|"
    r"(?:showed?|shows|found|observed|reported|there (?:was|were)|had|has) (?:no |a |any )?"
    r"(?:statistically )?significant (?:association|difference|effect|correlation)|"
    r"\bno (?:significant )?(?:association|difference|effect|correlation)|"
    r"(?:was|were|is|are) (?:not )?associated|correlat(?:es|ed)|"
    # "resulted in exclusion of 40 lakes" is a step of data cleaning.
    r"takes? (?:approximately |about |only )?\d+|finish(?:es|ed) in|accumulated|"
    r"resulted in(?! (?:the )?(?:exclusion|removal|inclusion|omission) of)|"
    r"leads? to|led to|establish(?:es|ed) a new|"
    r"(?<=\s)(?-i:fail(?:s|ed))(?=[,.;]| (?:in|on|at|for|because|when|with|after|under)\b)|"
    r"(?:cut|lowered|raised|brought) (?:\w+ ){0,4}(?:to|by) [-−+]?\d+|"
    r"(?:did|does|do) not (?:alter|change|affect|improve)|ranged from|account(?:s|ed) for|"
    r"(?:a|an|the) (?:median|mean|average) (?:\w+ ){0,3}?of [-−+]?\d+)\b",
    _I,
)
_STRONG_FINDING = re.compile(
    # "the observed distribution" names data, it observes nothing.
    # "to reduce autocorrelation" is a purpose, not a finding.
    r"\b(?<!to )(?:outperform|improv|achiev|reduc|increas|decreas|better|worse|higher|lower|faster|"
    r"slower|found|find|show|(?<!the )(?<!an )observ|associat|correlat|halv)",
    _I,
)
_CONFIGURATION = re.compile(
    r"\b(?:learning rate|batch size|mini-batch|epochs?|dropout|beam (?:size|search)|"
    r"hyper-?parameters?|warm-?up|we (?:use|used|set|train|trained|fine-tune|fine-tuned|run|ran|"
    r"include)|(?:was|were|is|are) (?:set|used|chosen|trained|selected|fixed|initiated|drawn|"
    r"sampled|kept|maintained)|results obtained (?:with|by|for)|configurations?|settings? of|"
    r"simulation (?:conditions?|settings?|scenarios?|designs?)|thinned|thinning|burn-?in|"
    r"(?:mcmc|markov) chains?|warm-?up iterations)\b",
    _I,
)
# What a digit in a sentence may be without being a measured number: a citation, a year, the
# number of a table, section or line, a list marker, a footnote mark glued to a word or a URL.
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_NOT_A_MEASURE = re.compile(
    # A citation with a locator: "[36, Sec 5.1]", "[4, p. 12]".
    r"\[[\d,;\s–-]+\]|\[\d{1,3},\s?(?i:sec|ch|chap|thm|lem|eq|p|pp|fig|app)\.?[^\]]{0,20}\]|"
    r"\[(?:19|20)\d\d[a-z]?\]|\([A-Z][^()]{0,60}\b(?:19|20)\d\d[a-z]?\)|"
    r"(?i:\b(?:tables?|fig(?:ure)?s?\.?|sections?|sec\.|chapters?|appendix|eq(?:uation)?s?\.?|"
    r"theorem|lemma|proposition|definition|algorithm|step|model|rq|q|experiment|study|phase|"
    r"stage|part|case|line|lines|row|column|item|page|listing|pp?\.)\s?\(?[A-Z]?\d+(?:\.\d+)*\)?)|"
    # A requirement's or a node's label: "B1-1", "R2-3".
    r"\b[A-Z]{1,2}\d{1,2}-\d{1,2}\b|"
    r"§\s?\d+(?:\.\d+)*|\((?:[A-Z]{1,2}\d+[^()]*)\)|(?i:\b(?:of|in|at|to|from|and|see|by|eq\.?|equation)\s)\(\d+(?:\.\d+)?\)|"
    r"\(\s?(?:\d|[ivx]{1,3}|[a-z])\s?\)|(?:^|\s)\(?\d{1,2}\)\s|^\s*\d+(?:\.\d+)+\s|"
    r"(?<=[A-Za-z)\]])\d{1,2}\b|(?<=[a-z][.,])\d{1,2}(?=\s|$)|\b\d{1,2}(?=https?:|[A-Z][a-z])|"
    r"\b(?:19|20)\d\d\b(?![\d%]|[.,]\d)|"
    # A date, often a footer the PDF runs into a sentence: "January 9, 2024", "9 Jan. 2024".
    rf"(?i:\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d\d|"
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+(?:19|20)\d\d)|"
    # A formula's braces ("read{7, m}") and a symbol named by its kind ("the digit 7").
    r"\{[^{}]*\}|(?i:\b(?:digit|letter|symbol|character|constant)\s)\d+"
)
_NUMBER = re.compile(
    # "7e−10", "1.2e-5": a number in scientific notation is one number.
    r"(?<![\w.-])[-−+]?\d+(?:[.,]\d+)*(?:[eE][-−+]?\d+\b)?(?:\s?%)?"
    r"(?:\s?[-–]\s?\d+(?:[.,]\d+)*(?:\s?%)?)?"
    r"(?:[KMB]\b|-fold|×)?(?![A-Za-z\d-])(?!\.\d)(?!/[A-Za-z])"
)
_UNIT = re.compile(
    r"\s?(?:[A-Z][A-Z0-9-]{1,6}\b|(?:ms|s|(?:milli|micro|nano)?seconds?|minutes?|hours?|days?|"
    r"weeks?|months?|years?|GB/s|[KMGT]B|nM|mm|cm|nm|km|"
    r"μM|mM|μg/ml|mg|kg|g|°C|̊C|Hz|points?|percentage points)\b)"
)


# A value the paper sets, not one it measures: "setting cp to a smaller value (0.1)", "a
# learning rate of 0.001", "models with over 15,000 parameters", "5 blocks".
_CONFIGURED = re.compile(
    r"\b(?:set|setting|fixed|fixing|increasing|decreasing|raising|lowering|varying)\b[^.;]{0,40}?"
    r"\b(?:to|at)\s+(?:a\s+(?:\w+\s+)?value\s+(?:of\s+)?)?\(?[-−+]?\d[\d.,]*\)?|"
    r"\bvalues?\s+(?:of\s+)?\(?[-−+]?\d[\d.,]*\)?|"
    r"\b(?:significance|alpha|α)(?:\s+(?:level|threshold|criterion))?\s+(?:of\s+|=\s?|at\s+)?"
    r"0?\.\d+|\b(?:tried|tested|chose|choose)\s+"
    r"(?:\w+\s+){0,3}?[-−+]?\d[\d.,]*(?:\s?[×x]\s?\d+)?"
    r"(?:\s+(?:and|or)\s+\d[\d.,]*(?:\s?[×x]\s?\d+)?)?|\b(?:learning rate|batch size|beam size|"
    r"dropout(?: rate)?|weight decay|temperature|window size|hidden size|dimension)\s+"
    r"(?:of\s+|=\s?)?[-−+]?\d[\d.,]*|\b(?:over |about |up to )?\d[\d,.]*\s+(?:\w+\s+)?"
    r"(?:parameters|epochs|iterations|steps|layers|heads|blocks|hidden units|neurons|GPUs|CPUs|"
    r"cores|machines|nodes)\b",
    _I,
)


# "outperforms 17 competitive clustering methods", "on 6 benchmarks": how many things were
# compared, not what was measured.
_COUNT_OF_COMPARED = re.compile(
    r"(?<![\w.,])\d[\d,]*\s+(?:[a-z-]+\s+){0,2}?(?:methods|baselines|benchmarks|datasets|"
    r"data sets|tasks|competitors|approaches|algorithms|systems|languages|metrics)\b"
    r"(?:\s+(?:over|out of|of)\s+\d+\b)?",  # "on 2 benchmarks over 3"
    re.IGNORECASE,
)


def measured_numbers(text: str) -> list[re.Match[str]]:
    """The numbers of ``text`` that may be measurements (see :data:`_NOT_A_MEASURE`); the size
    of a sample ("200 randomly sampled papers", "n = 3") is what a result rests on, a value
    the paper sets (:data:`_CONFIGURED`) is its configuration, and a count of the methods or
    benchmarks compared is the comparison's scope: none is a result."""
    masked = _NOT_A_MEASURE.sub(lambda m: " " * len(m.group(0)), text)
    masked = _SAMPLE.sub(lambda m: " " * len(m.group(0)), masked)
    masked = _CONFIGURED.sub(lambda m: " " * len(m.group(0)), masked)
    masked = _COUNT_OF_COMPARED.sub(lambda m: " " * len(m.group(0)), masked)
    return list(_NUMBER.finditer(masked))


def is_result(text: str) -> re.Match[str] | None:
    """The finding verb of a sentence that states a finding with a measured number, or None.

    A sentence of configuration (a learning rate, "the results obtained with ...") is a result
    only when it also has a strong finding ("outperforms", "lower", "we found").
    """
    finding = _FINDING.search(text)
    if finding is None or not measured_numbers(text):
        return None
    if _CONFIGURATION.search(text) and not _STRONG_FINDING.search(text):
        return None
    return finding


# What introduces the other party of a comparison right before its number ("against
# Temporal's 9.16", "than BM25's 67.8", "from 9.16% to 4.2%"): a number after it is not the
# paper's own.
_OTHER_PARTY = re.compile(
    r"\b(?:against|than|compared (?:with|to)|versus|vs\.?|v\.s\.?|relative to|from|"
    r"baselines?'?s?|previous|prior|existing|state[- ]of[- ]the[- ]art)\b",
    _I,
)
_PAIR_MARK = re.compile(r"^[\s%)]*(?:vs\.?|v\.s\.?|versus|against)[\s(]*$", _I)
_TURN = re.compile(
    r"\b(?:than|outperform\w*|surpass\w*|compared (?:with|to)|against|versus|worse|better)\b", _I
)
_OWN_PARTY = re.compile(
    r"\b(?:ours|our (?:[\w-]+ )?(?:method|model|approach|system|policy|technique|framework)|"
    r"the proposed)\b",
    _I,
)


def _own_party(text: str, names: frozenset[str]) -> bool:
    """True when ``text`` names the paper's work as a party of a comparison ("ours", "the
    proposed method", a name it gives its work); a narrator's "we" is no party."""
    if _OWN_PARTY.search(text):
        return True
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names)


def _names_other(clause: str, names: frozenset[str]) -> bool:
    """True when ``clause`` names a system by a capitalised word that is not the paper's."""
    if _own_party(clause, names):
        return False
    # A metric is spelt in capitals ("BLEU", "NMI", "F1"); a system mostly not ("Conductor",
    # "Temporal's", "NNGen"); a sentence's first word is no name.
    words = re.findall(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'’-]*", clause.strip())
    return any(
        re.search(r"[a-z]", w)
        and not re.match(r"^(?:The|A|An|In|On|For|With|At|By|Of|To|And|Our|We|This|These|It)$", w)
        for w in words
    )


def own_number(
    text: str, names: frozenset[str], *, for_paper: bool = False
) -> tuple[int, int, str] | None:
    """The measured number of ``text`` that belongs to the paper's own work, with its unit.

    With one number, or several and no other party, it is the first. With a baseline's number
    beside the paper's ("Against Temporal's 9.16, the retry policy reaches 12.3", "worse than
    FIRA (9.16 v.s 17.67)", "from 9.16% to 4.2%"), it is the one attached to the paper's
    work; None when the rules cannot tell which that is, so no baseline's number is quoted
    as the paper's. In the abstract or the conclusion (``for_paper``), which speak for the
    paper whatever their subject, the first number no other party introduces is the paper's.
    """
    nums = measured_numbers(text)
    if not nums:
        return None
    chosen: re.Match[str] | None = nums[0]
    if len(nums) > 1 and (_OTHER_PARTY.search(text) or _TURN.search(text)):
        chosen = None
        for a, b in itertools.pairwise(nums):
            # "the retry policy lowers it from 9.16% to 4.2%": the second is the work's.
            if re.search(r"\bfrom\s*$", text[: a.start()], _I) and re.match(
                r"^[\s%]*to\s*$", text[a.end() : b.start()], _I
            ):
                chosen = b if names_own_work(text[: a.start()], names) else None
                break
            if not _PAIR_MARK.match(text[a.end() : b.start()]):
                continue
            # "N1 v.s N2": the numbers follow the order of the parties around "than".
            turns = list(_TURN.finditer(text[: a.start()]))
            turn = turns[-1] if turns else None
            if turn is not None:
                pre, post = text[: turn.start()], text[turn.end() : a.start()]
                if _own_party(post, names) and not _own_party(pre, names):
                    chosen = b
                elif _own_party(pre, names) and not _own_party(post, names):
                    chosen = a
            break
        else:
            previous = 0
            for n in nums:
                left = text[previous : n.start()]
                clause = re.split(r"[,;(]", left)[-1]
                previous = n.end()
                if _OTHER_PARTY.search(clause):
                    continue
                # "the retry policy achieves second place, with Conductor at 12.3": a number
                # whose own clause names another system is that system's.
                if _names_other(clause, names):
                    continue
                if for_paper or names_own_work(left, names):
                    chosen = n
                    break
    if chosen is None:
        return None
    unit = _UNIT.match(text, chosen.end())
    end = unit.end() if unit else chosen.end()
    return chosen.start(), end, text[chosen.start() : end].strip()


def _rank(s: Sentence) -> int:
    return 0 if in_abstract(s) else 1 if in_closing(s) else 2


def results(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Sentences that state a finding of the paper's own work with its number, abstract first,
    then the closing sections, then the rest (introductions left out)."""
    found = []
    for s in sentences:
        if introductory(s) or not about_own(s, names) or is_result(s.text) is None:
            continue
        # Only where papers state their findings, and only of a subject that is the paper's.
        # The abstract and the conclusion speak for the paper; elsewhere the subject must.
        if not in_results_place(s) or not (speaks_for_paper(s) or names_own_work(s.text, names)):
            continue
        if cites_others(s.text) and not _FIRST_PERSON.search(s.text):
            continue
        if symbolic(s.text) or of_another(s.text, names):
            continue
        number = own_number(s.text, names, for_paper=speaks_for_paper(s))
        if number is None:
            continue
        found.append(Evidence(s, *number))
    return sorted(found, key=lambda e: _rank(e.sentence))


# -- spreads -------------------------------------------------------------------------------------

_SPREAD = re.compile(
    r"(?:±|\+\s?[−-]|\+/-)\s*\d[\d.,]*|"
    r"\b9[059]\s?%\s?(?:CI|confidence intervals?|C\.I\.)\s*[=:,]?\s*\(?\[?[-−]?\d[\d.]*\s*"
    r"(?:–|-|to|,)\s*[-−]?\d[\d.]*|"
    r"\b(?:CI|confidence interval)\s*[=:]?\s*\(?\[?[-−]?\d[\d.]*\s*(?:–|-|to|,)\s*[-−]?\d|"
    r"\b(?:SD|S\.D\.|SEM?|S\.E\.M?\.?|std|σ)\s*[=:]\s*\d[\d.]*|"
    r"\b[pP]\s*[<=≤]\s*0?\.\d+|"
    r"(?-i:\b(?:t|F|χ2|U|z|H)\s?(?:\(\s?\d+(?:,\s?\d+)?\s?\)|\d{1,3})?\s*=\s*[-−]?\d+(?:\.\d+)?)|"
    r"\bmeans?\s*(?:±|\+\s?[−-])\s*(?:SD|S\.D\.|SE|S\.E\.M?\.?|standard (?:deviation|error))|"
    r"\((?:±|\+\s?[−-])\s?(?:SD|SE|S\.E\.M?\.?)\)",
    _I,
)
_INPUT = re.compile(
    r"\b(?:drawn|sampled|generated|simulated|set|initiated|maintained|kept|held|fixed|chosen)\b"
    r"|\btemperature of\b|\bhumidity\b|\bparameters?\b",
    _I,
)
_PRESENTED = re.compile(
    r"\b(?:expressed|presented|given|reported|shown|are|were) as\b|\bvalues? "
    r"are\b|\bresults are\b|\bmeans? ±",
    _I,
)


def spreads(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Spreads, intervals and tests of the paper's own results (docs/reviewer.md)."""
    found = []
    for s in sentences:
        m = _SPREAD.search(s.text)
        if m is None or introductory(s) or not about_own(s, names):
            continue
        if not in_results_place(s):
            continue
        reported = is_result(s.text) is not None or _PRESENTED.search(s.text) is not None
        # "heat stress (35:28 ± 0.08 °C) was initiated": the spread of a condition it sets.
        if not reported or (_INPUT.search(s.text) and not _STRONG_FINDING.search(s.text)):
            continue
        found.append(Evidence(s, m.start(), m.end(), " ".join(m.group(0).split())))
    return sorted(found, key=lambda e: _rank(e.sentence))


# -- comparisons ---------------------------------------------------------------------------------

_COMPARED = re.compile(
    r"\b(?:outperform(?:s|ed|ing)?|surpass(?:es|ed)?|(?:better|worse|higher|lower|faster|slower|"
    r"more|less|fewer|greater|smaller|larger)\s+(?:\w+\s+){0,3}?than|compared\s+(?:with|to|"
    r"against)|in comparison (?:with|to)|relative to|vs\.?|versus)\s+"
    r"(?:(?:the|a|an|its|their|both|all|even|each|every|previous|prior|existing|"
    r"typical|standard|strong|strongest|baseline|plain|default|other)\s+)*"
    r"(?P<name>[^,;.()]{2,60})",
    _I,
)
_INCLUSION = re.compile(r"\b(?:included|include|inclusion|selected|eligible|in which)\b", _I)
_NAMED = re.compile(r"(?<!^)(?<![.!?]\s)\b(?:[A-Z][\w'’-]*[A-Z0-9][\w'’-]*|[A-Z][a-z]+[\w'’-]*)")


def _name(phrase: str) -> str | None:
    """The compared system in ``phrase`` when it is named: a capitalised word or an acronym
    (``BM25``, ``the PDF reader``, ``Temporal's default policy``); None for "the plain
    restart"."""
    words = phrase.split()[:6]
    for i, w in enumerate(words):
        if re.match(r"^[A-Z][\w'’.-]*$", w) and not re.match(r"^(?:The|A|An|In|On|For)$", w):
            return " ".join(words[: i + 1]) if i < 4 else w
    return None


def speaks_of_own(sentence: Sentence, names: frozenset[str]) -> bool:
    """True when the sentence names the paper's own work: first person, "the proposed", or a
    name the paper gives its work."""
    text = sentence.text
    return bool(
        _FIRST_PERSON.search(text)
        or re.search(r"\b(?:the proposed|this (?:model|method|approach|system))\b", text, _I)
        or any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names)
    )


# An ablation or a variant of the paper's own work: "RetryNet w/o backoff", "the variant
# without memory", "our full model".
_VARIANT = re.compile(
    r"\b(?:without|w/o|variants?|ablat\w*|our|ours|the proposed|full (?:model|method|system))\b",
    _I,
)


def own_variant(phrase: str, names: frozenset[str]) -> bool:
    """True when the compared ``phrase`` is the paper's own work or a variant of it: it holds
    a name the paper gives its work ("a Bacteria-specific RNN-LM" when the paper's model is
    the RNN-LM) or an ablation's or a variant's word ("w/o", "without", "variant")."""
    return bool(_VARIANT.search(phrase)) or any(
        re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", phrase) for n in names
    )


def comparisons(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Results of the paper's own work that name what they are compared with."""
    found = []
    for s in sentences:
        if introductory(s) or not speaks_of_own(s, names) or is_result(s.text) is None:
            continue
        if not in_results_place(s):
            continue
        if _INCLUSION.search(s.text):
            continue
        for m in _COMPARED.finditer(s.text):
            name = _name(m.group("name"))
            if name is not None and name not in names and not own_variant(m.group("name"), names):
                found.append(Evidence(s, m.start(), m.end("name"), name.rstrip("'’s")))
                break
    return sorted(found, key=lambda e: _rank(e.sentence))


# -- releases ------------------------------------------------------------------------------------

_RELEASED = re.compile(
    r"\b(?:(?:our|the|all(?: relevant)?)\s+(?:source\s+)?(?:code|data(?:sets?)?|software|"
    r"implementation|models?|corpus|annotations|materials|package|judgments|templates)\b"
    r"[^.]{0,90}?\b(?:(?:is|are|has been|have been|was|were)\s+(?:made\s+)?"
    r"(?:freely\s+|publicly\s+|openly\s+)?(?:available|released|open[- ]sourced|distributed|"
    r"accessible|hosted|deposited|within)|can be "
    r"(?:downloaded|accessed|obtained|found))|\bwe\s+(?:release|open[- ]source|make|publish|share)"
    r"\b[^.]{0,90}|^\W*\d?(?:Code|Data|Software)\b[^.]{0,40}\bavailable)",
    _I,
)
_LOCATION = re.compile(
    r"(?:https?://|www\.)\S+(?:\s(?=[\w-]+/)\S+)?|\b(?:github|gitlab|bitbucket)\.(?:com|org|io)"
    r"(?:/\S*)?|\b[\w-]+\.github\.io\S*|\bzenodo\b\S*|\bhuggingface\.co\S*|\bosf\.io\S*|"
    r"\bfigshare\b\S*|\bdoi\.org/\S+|\bCRAN\b|\bPyPI\b|\b(?:the |its )?(?:supporting information|"
    r"supplementary (?:material|data|information|files?))\b",
    _I,
)
_USED_BY_US = re.compile(r"\b(?:we (?:use|used|rely|relied|build|built)|using|based on)\b", _I)
_PROMISE = re.compile(r"\b(?:will be|to be|upon (?:request|acceptance)|on request)\b", _I)


def releases(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """The paper's own code, data or software, released with a location."""
    found = []
    for s in sentences:
        m = _RELEASED.search(s.text)
        # "We used the X data, which are available at ...": another project's release.
        if (
            m is None
            or _PROMISE.search(s.text[m.start() :])
            or _USED_BY_US.search(s.text[: m.start()])
        ):
            continue
        where = _LOCATION.search(s.text, m.start())
        if where is None or where.start() - m.end() > 120:
            continue
        location = re.sub(r"[.,;)]+$", "", " ".join(where.group(0).split()))
        if re.match(r"https?://|www\.|[\w-]+\.(?:com|org|io)", location):
            # A URL the PDF broke at a line end ("github.com/ tensorflow/x") is one URL.
            location = re.sub(r"^https?://", "", location).replace(" ", "")
        else:
            location = re.sub(r"^(?:the|its) ", "", location)
        found.append(Evidence(s, m.start(), where.end(), location))
    return found


# -- samples -------------------------------------------------------------------------------------

_UNITS = (
    r"participants|patients|subjects|respondents|volunteers|annotators|raters|users|students|"
    r"children|adults|women|men|males|females|boys|girls|people|individuals|households|nurses|"
    r"clinicians|physicians|"
    r"teachers|interviews|focus groups|mice|rats|animals|plants|pots|genotypes|"
    r"runs|seeds|repetitions|replicates|replications|trials|folds|papers|articles|"
    r"studies|hospitals|schools"
)
_FUNCTION_WORD = r"(?:as|the|of|for|in|on|at|to|from|by|with|and|or|a|an|than|per|each|were|was)"
_SAMPLE = re.compile(
    # Not the end of a range ("25 – 51 studies": each of several had 25 to 51).
    rf"(?<![\w.,])(?<![–-])(?<![–-]\s)(?!(?:19|20)\d\d\b)\d[\d,]*\s+"
    rf"(?:(?!{_FUNCTION_WORD}\b)[a-z-]+\s+){{0,2}}?"
    rf"(?:{_UNITS})\b|\(n\s?=\s?\d[\d,]*\)|\bn\s?=\s?\d[\d,]*\s+(?:{_UNITS})\b|"
    rf"\bin (?:triplicate|duplicate|quadruplicate)\b",
    _I,
)


_RATE_OF = re.compile(r"\b(?:for|in|out of) every\s+$|\bper\s+$|\bone in\s+$", _I)
"""What stands before the denominator of a rate ("1 ear for every 1000 plants", "per 1,000")."""


# "their review (98 papers ...)": another study's sample; "in our example (N = 46)": a worked
# example's, not the data the results rest on.
_NOT_OUR_SAMPLE = re.compile(
    r"\btheir (?:review|study|survey|analysis|sample|experiments?|data(?:set)?|work|trial)\b|"
    r"\b(?:(?:our|this|the|an?) (?:toy |worked |running |simple |hypothetical |illustrative )?"
    r"example|for (?:example|illustration)|to illustrate|hypothetical)\b",
    re.IGNORECASE,
)


_COLLECTED = re.compile(
    r"\b(?:were|was|had been|have been) (?:\w+ )?(?:recruited|enrolled|collected|sampled|"
    r"surveyed|interviewed|tested|measured|recorded|gathered|assessed|randomi[sz]ed|"
    r"assigned|annotated|used in (?:the|this|our) (?:study|experiments?))\b|"
    r"\b(?:took part|participated|completed the)\b|\b(?:the|this|our) (?:study|sample|"
    r"survey|trial|cohort|experiment|data ?set|corpus) (?:involved|included|comprised|"
    r"consisted of|enrolled|recruited|contains?|covers?)\b",
    _I,
)


def samples(sentences: Sequence[Sentence], names: frozenset[str]) -> list[Evidence]:
    """Counts of the units the paper's results rest on (not a rate's denominator, not another
    study's sample, not a worked example's)."""
    found = []
    for s in sentences:
        if _NOT_OUR_SAMPLE.search(s.text):
            continue
        m = next(
            (m for m in _SAMPLE.finditer(s.text) if not _RATE_OF.search(s.text[: m.start()])),
            None,
        )
        if m is None or introductory(s) or cites_others(s.text) or not about_own(s, names):
            continue
        # Where papers say what their data are, in words that make the data the paper's own.
        if not in_methods_place(s) or not (
            names_own_work(s.text, names) or _COLLECTED.search(s.text)
        ):
            continue
        found.append(Evidence(s, m.start(), m.end(), " ".join(m.group(0).split())))
    return sorted(found, key=lambda e: _rank(e.sentence))


def first(
    evidence: Sequence[Evidence], skip: Iterator[Sentence] | Sequence[Sentence] = ()
) -> Evidence | None:
    """The first piece of evidence whose sentence is not in ``skip``."""
    used = {id(s) for s in skip}
    return next((e for e in evidence if id(e.sentence) not in used), None)
