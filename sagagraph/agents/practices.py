"""What a reviewer looks for in a paper, and how to tell it is really there or really missing.

A :class:`Practice` is found in a sentence only when the sentence is about the paper's own
work and does not deny it (:func:`~sagagraph.agents.paper_sentences.about_own_work`,
:func:`~sagagraph.agents.paper_sentences.negated`), and passes the practice's own sense check:
"the server bootstrap" is no bootstrap test, the standard deviation of a workload generator's
parameter is no spread of results, "an open-source web browser" is no code release. Absence
is claimed only when none of the practice's :attr:`Practice.absent_terms` occurs anywhere in
the text, references and appendices included; the claim lists what was searched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sagagraph.agents.paper_sentences import Sentence, about_own_work, negated
from sagagraph.agents.quote_check import PageKeys

_I = re.IGNORECASE


@dataclass(frozen=True)
class Practice:
    """One thing a reviewer checks, with the words that show it and the words searched for."""

    name: str
    pattern: re.Pattern[str]
    """Matches a sentence that shows the practice."""
    absent_terms: tuple[str, ...]
    """Searched in the whole text before the practice is said to be missing."""
    praise: str
    """A strength's opening when it is found: ``Reports the spread of its results``."""
    sense: re.Pattern[str] | None = None
    """When set, the sentence must also match this (the keyword is used in the right sense)."""
    nonsense: re.Pattern[str] | None = None
    """When set, a sentence matching this is not evidence (a server's bootstrap)."""

    def shown_by(self, sentence: Sentence) -> bool:
        m = self.pattern.search(sentence.text)
        if m is None or negated(sentence.text, m.start()) or not about_own_work(sentence):
            return False
        if self.sense is not None and not self.sense.search(sentence.text):
            return False
        return not (self.nonsense is not None and self.nonsense.search(sentence.text))

    def evidence(self, sentences: Sequence[Sentence]) -> Sentence | None:
        """The first sentence of the paper's own work that shows the practice."""
        return next((s for s in sentences if self.shown_by(s)), None)

    def missing(self, keys: PageKeys) -> bool:
        """True when none of :attr:`absent_terms` is anywhere in the paper."""
        return not any(keys.mentions(t) for t in self.absent_terms)

    def searched(self) -> str:
        """``'a', 'b' or 'c'``: the terms a claim of absence lists."""
        quoted = [f"'{t}'" for t in self.absent_terms]
        return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


_RESULT_WORDS = re.compile(
    r"\b(?:mean|average|results?|scores?|runs|seeds|trials|replicates|samples|measurements?|"
    r"groups?|differences?|effects?|accuracy|performance|error|values|significant\w*|"
    r"participants|patients|subjects|cells|plants|mice|rats)\b",
    _I,
)

PRACTICES: dict[str, Practice] = {
    p.name: p
    for p in (
        Practice(
            "significance",
            re.compile(
                r"\bp\s*[<=≤]\s*0?\.\d|±\s*\d|\bstandard (?:deviations?|errors?)\b|\bS\.?[DE]\.? ?"
                r"=|\bconfidence intervals?\b|\b95\s?% CI\b|\bstatistically significant\w*\b|"
                r"\bsignificantly (?:higher|lower|different|"
                r"improv\w+|reduc\w+|increas\w+|decreas\w+|associated|correlated)\b|\b(?:t-tests?|"
                r"ANOVA|Wilcoxon|Mann-Whitney|chi-squared?|Kruskal|Tukey|regression analys\w+)\b|"
                r"\bbootstrap(?:ped)? (?:confidence|resampl\w+|samples|test)",
                _I,
            ),
            (
                "standard deviation",
                "confidence interval",
                "significant",
                "standard error",
                "t-test",
                "ANOVA",
                "variance",
                "±",
            ),
            "Reports the spread or significance of its results",
            sense=_RESULT_WORDS,
            nonsense=re.compile(
                r"\b(?:parameter|generator|workload|distribution of (?:the )?"
                r"(?:input|keys|requests))\b",
                _I,
            ),
        ),
        Practice(
            "baseline",
            re.compile(
                r"\bbaselines?\b|\bcompared? (?:with|to|against)\b|\boutperform\w*|"
                r"\bstate[- ]of[- ]the[- ]art\b|\bin comparison (?:with|to)\b|\bthan (?:the )?"
                r"(?:previous|prior|existing|standard|conventional|traditional)\b",
                _I,
            ),
            (
                "baseline",
                "compared with",
                "compared to",
                "compared against",
                "outperform",
                "state of the art",
                "state-of-the-art",
                "in comparison",
            ),
            "Compares its results with other approaches",
        ),
        Practice(
            "ablation",
            re.compile(
                r"\bablat\w*|\bmodel variations?\b|\bwe (?:also )?vary\b|\bvarying (?:the|our)\b|"
                r"\bsensitivity (?:analysis|study)\b|\bvariants? of (?:our|the) (?:model|method|"
                r"approach|system|architecture)\b|\bcontribution of each\b|\bwithout (?:the|our) "
                r"[\w-]+ (?:component|module|layer|loss|step|term|stage)\b",
                _I,
            ),
            ("ablation", "model variations", "we vary", "sensitivity analysis", "variants of"),
            "Studies the effect of its design choices",
        ),
        Practice(
            "code",
            re.compile(
                r"\b(?:github|gitlab|bitbucket)\.(?:com|org)/|\bzenodo\b|\bhuggingface\.co/|"
                r"\b(?:code|data|dataset|datasets|implementation|software|package|models?|"
                r"corpus|tool|library)\b[^.]{0,60}\b(?:is|are|will be|has been|have "
                r"been) (?:made )?(?:freely |publicly |openly )?(?:available|released|"
                r"open[- ]sourced|distributed)\b|\b(?:released|distributed|licensed|available) "
                r"under (?:the|an?)\b|\bGNU General Public Licen[cs]e\b|\bwe (?:release|"
                r"open[- ]source|make available|publish)\b[^.]{0,40}\b(?:code|implementation|"
                r"software|data|dataset|models?|tool)\b|\bavailable (?:on|from|via) (?:CRAN|PyPI|"
                r"GitHub)\b",
                _I,
            ),
            (
                "github",
                "gitlab",
                "zenodo",
                "available at",
                "available from",
                "available online",
                "publicly available",
                "freely available",
                "open source",
                "open-source",
                "source code",
                "licence",
                "license",
            ),
            "Makes its work available to others",
            sense=re.compile(
                r"\b(?:we|our|this (?:paper|package|work|study|software|tool)|the "
                r"(?:code|data|dataset|package|software|implementation|tool|"
                r"corpus))\b",
                _I,
            ),
            nonsense=re.compile(
                r"\b(?:web browser|operating system|available in the "
                r"literature|if [^.]{0,40} is available)\b",
                _I,
            ),
        ),
        Practice(
            "limitations",
            re.compile(
                r"\blimitations?\b|\bthreats to validity\b|\bshortcomings?\b|\bfailure (?:cases|"
                r"modes)\b|\bcaveats?\b|\bweakness(?:es)?\b",
                _I,
            ),
            (
                "limitation",
                "shortcoming",
                "threats to validity",
                "caveat",
                "weakness",
                "fail",
                "drawback",
            ),
            "Discusses its limitations",
            sense=re.compile(
                r"\b(?:our|we|this (?:study|work|approach|method|paper|analysis|"
                r"system|package|thesis)|the present|the current)\b",
                _I,
            ),
        ),
        Practice(
            "evaluation",
            re.compile(
                r"\bwe (?:measured?|evaluated?|benchmarked?|ran|run|tested)\b|\b(?:throughput|"
                r"latency|speed-?up|running time|execution time|user study|usability|"
                r"participants)\b|\bperformance (?:of|on)\b",
                _I,
            ),
            ("evaluation", "measured", "performance", "benchmark", "user study", "participants"),
            "Measures how the system performs",
        ),
        Practice(
            "human study",
            re.compile(
                r"\b(?:user stud(?:y|ies)|usability|human evaluations?|human judge?ments?|"
                r"annotators|crowd ?workers|participants|interviews?|focus groups?|respondents|"
                r"questionnaires?|surveyed)\b",
                _I,
            ),
            (
                "user study",
                "participants",
                "human evaluation",
                "usability",
                "interview",
                "annotator",
                "questionnaire",
                "respondents",
            ),
            "Evaluates with people",
        ),
        Practice(
            "analysis method",
            re.compile(
                r"\b(?:thematic|content|framework|qualitative|statistical|survival|regression|"
                r"Cox) (?:analysis|analyses|model|regression)\b|\bcoded\b|\bcoding (?:scheme|"
                r"frame)\b|\bgrounded theory\b|\binter-?rater\b",
                _I,
            ),
            (
                "thematic analysis",
                "content analysis",
                "coded",
                "coding",
                "statistical analysis",
                "regression",
                "analysed",
                "analyzed",
            ),
            "States how its data were analysed",
        ),
        Practice(
            "ethics",
            re.compile(
                r"\b(?:ethic(?:s|al) (?:committee|approval|board|review)|informed consent|"
                r"institutional review board|IRB)\b",
                _I,
            ),
            ("ethic", "informed consent", "review board", "IRB", "consent"),
            "Reports ethical approval and consent",
        ),
        Practice(
            "selection method",
            re.compile(
                r"\binclusion criteria\b|\bexclusion criteria\b|\bwe (?:collected|selected|"
                r"searched|surveyed|identified)\b|\bsearch (?:terms|queries|strategy|string)\b|"
                r"\bsystematic(?:ally)? (?:review|search)",
                _I,
            ),
            (
                "inclusion criteria",
                "we searched",
                "we selected",
                "we collected",
                "search terms",
                "search strategy",
                "systematic",
            ),
            "Says how the works it covers were chosen",
        ),
        Practice(
            "future work",
            re.compile(
                r"\bfuture (?:work|directions?|research|studies)\b|\bin the future\b|\bopen "
                r"(?:problems|questions|challenges)\b",
                _I,
            ),
            (
                "future work",
                "future research",
                "future directions",
                "future studies",
                "in the future",
                "open problems",
                "open questions",
                "open challenges",
            ),
            "Names the questions it leaves open",
        ),
        Practice(
            "example",
            re.compile(
                r"\bfor example\b|\bexample \d|\billustrat\w+|\bworked example\b|"
                r"\busage\b|\bconsider (?:the|a)\b",
                _I,
            ),
            ("for example", "example", "illustrat", "usage", "for instance"),
            "Illustrates its use with an example",
        ),
        Practice(
            "counterarguments",
            re.compile(
                r"\bcounter-?arguments?\b|\bobjections?\b|\bcritics?\b|\bcriticism\b|"
                r"\balternative views?\b|\bone might argue\b|\bskeptic",
                _I,
            ),
            (
                "counterargument",
                "counter-argument",
                "objection",
                "critic",
                "alternative view",
                "one might argue",
                "skeptic",
                "sceptic",
            ),
            "Takes on objections to its position",
        ),
    )
}
"""Every practice by name."""
