"""The offline summary carries the main result with its number and none of issue 37's debris.

The debris classes are sentences that lean on something the summary does not have: a roadmap
("In Section 4, we show ..."), a pointer to a figure or table ("As shown in Table 2, ..."), a
"this" whose antecedent is left behind ("In this setting, ..."), and a sentence that says again
what an earlier one said (the conclusion restating the abstract). Each is planted in a paper
with the words that make a sentence score high (a result, a comparison), so a summarizer that
ranks by words alone picks it.
"""

from __future__ import annotations

import itertools

from sagagraph.agents.offline_summary import offline_summary
from sagagraph.agents.pdf.loader import parse_paper
from tests.agents.review_judge import holds_number, summary_debris
from tests.support.output_checks import assert_summary_is_prose
from tests.support.synthetic_papers import _sentences

MAIN_RESULT = (
    "The retry policy reaches a failure rate of 6.0% on 200 sagas, against 12.5% for a plain "
    "restart of the failed step."
)
ABSTRACT = [
    "Agents that call tools fail half way and leave partial work behind them.",
    "We propose a retry policy for saga steps that halves the failed sagas.",
    MAIN_RESULT,
    "The policy needs no change to the steps themselves and costs one extra call at most.",
]
DEBRIS = {
    "roadmap": "In Section 4, we show that the retry policy halves the failed sagas on every "
    "workload.",
    "figure or table": "As shown in Table 2, the retry policy outperforms the plain restart on "
    "every workload we tried.",
    "dangling this": "In this setting, the retry policy achieves the lowest failure rate of all "
    "the policies we tried.",
    "repeat": "In this paper, we proposed a retry policy for saga steps that halves the failed "
    "sagas.",
}


def _paper_text() -> str:
    # Every 29th generated sentence: subject, verb, object and tail all change each time.
    prose = itertools.islice(_sentences(), 0, None, 29)
    lines = ["Retrying Saga Steps", "Abstract", *ABSTRACT]
    for n, heading in enumerate(["1 Introduction", "2 Method", "3 Results", "4 Conclusion"]):
        lines.append(heading)
        lines += [next(prose) for _ in range(12)]
        if heading == "1 Introduction":
            lines.append(DEBRIS["roadmap"])
        if heading == "3 Results":
            lines += [DEBRIS["figure or table"], DEBRIS["dangling this"]]
        if heading == "4 Conclusion":
            lines.insert(len(lines) - 12, DEBRIS["repeat"])
        lines += [next(prose) for _ in range(n + 2)]
    lines.append("References")
    lines += [f"[{i}] A. Author. A paper about sagas, part {i}. 2020." for i in range(1, 8)]
    return "\n".join(lines)


def test_the_summary_holds_the_main_result_with_its_number() -> None:
    paper = parse_paper("retry.txt", [_paper_text()])
    text = offline_summary(paper, 300)
    assert holds_number(text, ["6.0%"]), text
    assert_summary_is_prose(paper, text, 300)


def test_the_summary_has_no_roadmap_pointer_dangling_this_or_repeat() -> None:
    paper = parse_paper("retry.txt", [_paper_text()])
    text = offline_summary(paper, 300)
    assert summary_debris(text) == [], text
    for sentence in DEBRIS.values():
        assert sentence not in text


def test_the_summary_opens_on_the_problem_and_ends_on_the_conclusion() -> None:
    paper = parse_paper("retry.txt", [_paper_text()])
    text = offline_summary(paper, 300)
    assert text.startswith(ABSTRACT[0])
    assert "propose a retry policy" in text
