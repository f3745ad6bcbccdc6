"""The validator judges function on any layout: one synthetic text per class of real input.

Each class stands for PDFs seen in the wild (two-column medical papers with headings in
capitals, unnumbered AAAI headings, a 1994 preprint whose reference list has no heading, a
3-page workshop paper, a French paper ending on "perspectives", a research proposal). The texts
are built here, so a class is tested without the file that showed it.
"""

from __future__ import annotations

import itertools

import pytest

from sagagraph.agents.engine import PartFound, ValidationReport
from sagagraph.agents.headings import HeadingScanner, is_debris, known_heading
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_agents import PaperDeps, ValidatorAgent
from sagagraph.agents.pdf.loader import UNHEADED_REFERENCES, parse_paper
from sagagraph.agents.pdf.pages import PageLayout, clean_pages, repair_slashed_marks
from sagagraph.agents.validation_rules import (
    REQUIRED_PARTS,
    SELF_NAMED,
    UNHEADED_INTRODUCTION,
    plan_signals,
    validation_report,
)
from sagagraph.saga.protocol import StepContext

_WHO = ("The cohort", "Our model", "The assay", "Each run", "The baseline", "The new method")
_DID = (
    ("reduced the error of", "will reduce the error of"),
    ("changed the yield of", "will change the yield of"),
    ("improved the recall of", "will improve the recall of"),
    ("bounded", "will bound"),
)
_WHAT = ("the first task", "plasma samples", "long documents", "the second group", "the index")


def prose(n: int, *, tense: str = "past") -> str:
    """``n`` distinct sentences of body text, in the past (reported) or future (planned)."""
    out = []
    for k, (who, did, what) in enumerate(itertools.product(_WHO, _DID, _WHAT)):
        if k == n:
            break
        out.append(f"{who} {did[0] if tense == 'past' else did[1]} {what} in setting {k + 1}.")
    return "\n".join(out)


def references(n: int, *, numbered: str = "[{}] ", glued: bool = False) -> str:
    entries = []
    for k in range(1, n + 1):
        author = f"A.Author{k},B.Writer" if glued else f"A. Author{k} and B. Writer"
        entries.append(numbered.format(k) + f"{author}. A study of things, part {k}. 199{k % 10}.")
    return "\n".join(entries)


def paper(*blocks: str) -> Paper:
    """A paper from text blocks, one page each (titles and headings on lines of their own)."""
    return parse_paper("synthetic.pdf", [*blocks])


ABSTRACT = "Abstract\n" + prose(6)


def assert_valid(p: Paper) -> None:
    report = validation_report(p)
    assert report.is_valid, (report.reason, p.outline())
    assert [f.part for f in report.found] == list(REQUIRED_PARTS)


# 1. Headings in capitals, unnumbered, as two-column medical journals print them.
def test_capital_headings_without_a_conclusion_heading() -> None:
    p = paper(
        "Fragment-based design of inhibitors\nA. Author, B. Author\n" + ABSTRACT,
        "INTRODUCTION\n" + prose(20) + "\nMATERIALS AND METHODS\n" + prose(20),
        "RESULTS\n" + prose(25) + "\nDISCUSSION\n" + prose(20),
        "CLINICAL PERSPECTIVES\n" + prose(5) + "\nACKNOWLEDGEMENTS\nWe thank the nurses.\n"
        "FUNDING\nThis work was funded by a grant.\nREFERENCES\n" + references(12, numbered="{} "),
    )
    assert_valid(p)
    assert validation_report(p).found[4].heading == "DISCUSSION"


def test_capital_headings_run_in_with_their_paragraph() -> None:
    """Two columns often leave the heading on the line its paragraph starts."""
    p = paper(
        "A cohort study of things\nABSTRACT " + prose(6),
        "INTRODUCTION Stress has been studied for decades in many places.\n"
        + prose(20)
        + "\nMETHODS Patients were recruited from three hospitals.\n"
        + prose(20),
        "RESULTS Of the patients, most stayed in the study.\n"
        + prose(20)
        + "\nDISCUSSION These findings agree with earlier cohorts.\n"
        + prose(20),
        "REFERENCES\n" + references(10),
    )
    assert_valid(p)
    assert [s.heading for s in p.sections][:4] == ["ABSTRACT", "INTRODUCTION", "METHODS", "RESULTS"]


def test_letter_spaced_and_run_together_headings_are_known() -> None:
    assert known_heading("R E S U L T S") == "results"
    assert known_heading("RELATEDWORK") == "related work"
    assert known_heading("Results of the trial") is None


# 2. Unnumbered headings (AAAI): "Experiments", "Experimental Results".
def test_unnumbered_headings_of_an_aaai_paper() -> None:
    p = paper(
        "Learning to Rank Things\n" + ABSTRACT + "\nIntroduction\n" + prose(20),
        "Related Work\n" + prose(15) + "\nMethod\n" + prose(20),
        "Experiments\n" + prose(10) + "\nExperimental Results\n" + prose(15),
        "Conclusion\n" + prose(6) + "\nReferences\n" + references(8, numbered=""),
    )
    assert_valid(p)
    assert "Experimental Results" in [s.heading for s in p.sections]


# 3. A numbered reference list [1]-[17] with no heading, from a font that runs words together,
#    and debris a broken text layer prints as headings.
def test_unheaded_numbered_reference_list_and_debris_headings() -> None:
    p = paper(
        "ASolverforThings\n" + ABSTRACT + "\nI.INTRODUCTION\n" + prose(20),
        "II.RELATED WORK\n" + prose(15) + "\nIII. SOLUTION\n" + prose(20),
        "IV. CONCLUSION\n" + prose(8) + "\nI I I/. SOLUTION\nE\n" + references(17, glued=True),
    )
    assert_valid(p)
    headings = [s.heading for s in p.sections]
    assert headings[-1] == UNHEADED_REFERENCES
    assert "E" not in headings and not any("I I I" in h for h in headings)


@pytest.mark.parametrize("line", ["I I I/. SOLUTION", "E", "A B C", "x/.y Method"])
def test_debris_is_never_a_heading(line: str) -> None:
    scanner = HeadingScanner()
    scanner.scan("Introduction")
    assert is_debris(line)
    assert scanner.scan(line, emphasized=True) is None


@pytest.mark.parametrize("title", ["A Study of Things", "Appendix A", "Type I and Type II Errors"])
def test_real_titles_are_not_debris(title: str) -> None:
    assert not is_debris(title)


# 4. A short paper whose one middle section is its method.
def test_short_paper_with_one_middle_section() -> None:
    p = paper(
        "A Workshop Idea\n" + ABSTRACT + "\n1 Introduction\n" + prose(12),
        "2 Approach\n" + prose(30),
        "3 Conclusion\n" + prose(6) + "\nReferences\n" + references(6),
    )
    assert_valid(p)
    found = {f.part: f.heading for f in validation_report(p).found}
    assert found["body"] == found["method"] == "2 Approach"


def test_one_middle_section_without_a_closing_is_still_incomplete() -> None:
    p = paper("A Plan\n" + ABSTRACT + "\n1 Introduction\n" + prose(12), "2 Method\n" + prose(30))
    report = validation_report(p)
    assert not report.is_valid and {"body", "conclusion", "references"} <= set(report.missing)


# 5. A closing section named for outlook or perspectives, in any language.
@pytest.mark.parametrize(
    ("closing", "refs"),
    [
        ("5 Travaux existants et perspectives", "Références"),
        ("5. Trabajos relacionados y perspectivas", "Referencias"),
        ("5 Discussion and Outlook", "References"),
        ("5 Ausblick", "Literatur"),
    ],
)
def test_closing_named_for_outlook_or_perspectives(closing: str, refs: str) -> None:
    p = paper(
        "Un article\n" + ABSTRACT + "\n1 Introduction\n" + prose(15),
        "2 Related Work\n" + prose(15) + "\n3 Model\n" + prose(20),
        "4 Evaluation\n" + prose(20) + f"\n{closing}\n" + prose(10),
        f"{refs}\n" + references(8),
    )
    assert_valid(p)
    assert validation_report(p).found[4].heading == closing


def test_perspectives_early_in_the_paper_do_not_close_it() -> None:
    p = paper(
        "A paper\n" + ABSTRACT + "\n1 Introduction\n" + prose(15),
        "2 Historical Perspectives\n" + prose(15) + "\n3 Model\n" + prose(20),
        "4 Results\n" + prose(20) + "\n5 Analysis\n" + prose(20),
        "References\n" + references(8),
    )
    assert validation_report(p).missing == ["conclusion"]


# 6. A plan is not a paper: results expected rather than reported.
def proposal(*, results: str = "4. Expected Results", tense: str = "future") -> Paper:
    return paper(
        "Benchmarking Recurrent Networks\n" + ABSTRACT + "\n1. Introduction\n" + prose(15),
        "2. Literature Review\n" + prose(15) + "\n3. Methodology\n" + prose(20, tense=tense),
        f"{results}\n" + prose(20, tense=tense) + "\n5. Timeline\n" + prose(3, tense=tense),
        "6. Budget\nThe budget covers two GPUs.\n7. Conclusion\n" + prose(5, tense=tense),
        "References\n" + references(8),
    )


def test_a_proposal_is_not_a_complete_paper_and_the_report_says_why() -> None:
    report = validation_report(proposal())
    assert not report.is_valid
    assert report.missing == ["results"]
    assert "plans a study" in report.reason and "4. Expected Results" in report.reason
    assert "5. Timeline" in report.reason


def test_a_paper_that_reports_results_is_no_plan() -> None:
    p = proposal(results="4. Results", tense="past")
    assert_valid(p)
    assert not plan_signals(p).is_plan


def test_a_document_calling_itself_a_proposal_without_results_is_a_plan() -> None:
    p = paper(
        "Benchmarking Recurrent Networks\nMaster's Research Proposal\n" + ABSTRACT,
        "1. Introduction\n" + prose(15) + "\n2. Literature Review\n" + prose(15),
        "3. Methodology\n" + prose(20, tense="future") + "\n4. Conclusion\n" + prose(5),
        "References\n" + references(8),
    )
    evidence = plan_signals(p)
    assert evidence.named == "Research Proposal" and evidence.is_plan
    assert "calls itself" in validation_report(p).reason


def test_future_work_and_we_will_show_keep_a_paper_valid() -> None:
    p = paper(
        "A paper\n" + ABSTRACT + "\n1 Introduction\nWe will show that it works.\n" + prose(15),
        "2 Related Work\n" + prose(15) + "\n3 Model\n" + prose(20),
        "4 Results\n" + prose(20) + "\n5 Future Work\n" + prose(6, tense="future"),
        "References\n" + references(8),
    )
    assert_valid(p)


# Parsing details these classes rest on.
def test_thesis_chapters_are_sections() -> None:
    scanner = HeadingScanner()
    first = scanner.scan("Chapter 1", "Introduction")
    assert first is not None and first.title == "Introduction" and first.lines == 2
    second = scanner.scan("CHAPTER 2 Background")
    assert second is not None and second.heading == "CHAPTER 2 Background"
    assert scanner.scan("Chapter 9", "Far Away") is None  # out of sequence


def test_a_heading_is_never_swallowed_by_small_affiliation_notes() -> None:
    page = ["Title", "1Department of Things, Umea", "2Department of Stuff", "ABSTRACT", "Text."]
    small = frozenset({"1Department of Things, Umea", "2Department of Stuff", "ABSTRACT"})
    cleaned = clean_pages([page], [small])
    assert "ABSTRACT" in [line for _, line in cleaned.lines]
    assert len(cleaned.notes) == 1


def test_a_lower_case_line_is_no_heading() -> None:
    scanner = HeadingScanner()
    assert scanner.scan("methods.") is None
    assert scanner.scan("Methods") is not None


def test_prose_sentences_are_distinct() -> None:
    lines = prose(40).splitlines()
    assert len(lines) == len(set(lines)) == 40
    assert all(" will " in s for s in prose(5, tense="future").splitlines())


class _TrustingEngine:
    """An engine that accepts every document, as a model fooled by the headings would."""

    name = "trusting"

    def validate(self, paper: Paper) -> tuple[ValidationReport, dict[str, int]]:
        found = [PartFound(part=p, heading="1. Introduction", page=1) for p in REQUIRED_PARTS]
        return ValidationReport(is_valid=True, found=found, reason="looks complete"), {}


class _OneLoader:
    def __init__(self, paper: Paper) -> None:
        self.paper = paper

    def load(self, path: str) -> Paper:
        return self.paper


def test_the_validator_step_halts_a_plan_whatever_the_engine_says() -> None:
    ctx = StepContext(
        saga_id="s1",
        step="validator",
        input={"paper": "proposal.pdf"},
        results={},
        deps=PaperDeps(_TrustingEngine(), _OneLoader(proposal()), None),
    )
    result = ValidatorAgent().execute(ctx)
    assert result.halt and result.output is None
    assert (
        result.reason and "plans a study" in result.reason and "Expected Results" in result.reason
    )
    assert result.data["missing"] == ["results"]


def test_unnumbered_subsections_nest_under_their_known_heading() -> None:
    """PLOS-style: "Materials and methods" has no text of its own; its subsections follow,
    set apart by the layout only."""
    pages = [
        "A wheat study\n" + ABSTRACT + "\nIntroduction\n" + prose(15),
        "Materials and methods\nGrowth Conditions\n" + prose(15) + "\nTrait Measures\n" + prose(15),
        "Results\nYield Traits\n" + prose(20) + "\nDiscussion\n" + prose(15),
        "Conclusion\n" + prose(5) + "\nReferences\n" + references(8, numbered=""),
    ]
    marked = frozenset({"GrowthConditions", "TraitMeasures", "YieldTraits"})
    p = parse_paper("plos.pdf", pages, layout=[PageLayout(emphasized=marked)] * len(pages))
    assert {"Growth Conditions", "Trait Measures"} <= {s.heading for s in p.sections}
    found = {f.part: f.heading for f in validation_report(p).found}
    assert found["method"] == "Materials and methods"


def test_the_papers_title_is_no_heading_and_split_accents_join() -> None:
    title = "Comparative physiological and metabolomics analysis of wheat"
    page = "Abstract\n" + prose(6) + "\nIntroduction\n" + prose(3) + "\n" + title
    layout = [PageLayout(emphasized=frozenset({title.replace(" ", "")}))]
    with_title = parse_paper("plos.pdf", [page, prose(10)], layout=layout)
    assert title in [s.heading for s in with_title.sections], "the layout alone vouches for it"
    p = parse_paper("plos.pdf", [page, prose(10)], metadata_title=title, layout=layout)
    assert [s.heading for s in p.sections] == ["Abstract", "Introduction"]
    assert title in p.sections[-1].text
    spanish = parse_paper("es.pdf", ["Resumen\n" + prose(6) + "\nI. INTRODUCCI ´ON\n" + prose(3)])
    assert [s.heading for s in spanish.sections] == ["Resumen", "I. INTRODUCCIÓN"]


# A 1994 preprint: its font map prefixes every digit and mark with a slash, runs words
# together and letter-spaces the Roman numerals; its reference list has no heading.
def test_a_preprint_whose_font_slashes_its_marks() -> None:
    entries = "\n".join(
        f"/[/{'/'.join(str(k))}/] N/. Author{k}/, Phys/. Rev/. D/{k}/, /1/1/3 /(/1/9/8/9/)/."
        for k in range(1, 18)
    )
    p = paper(
        "HeavyMesonsInARelativisticModel\n" + ABSTRACT + "\nI/. INTRODUCTION\n" + prose(15),
        "I I/. THE MODEL\n"
        + prose(20)
        + "\nForthisproblemwehaveusedharmonicoscillatorwavefunctions\n"
        + prose(5)
        + "\nI I I/. SOLUTION OF THE WAVE EQUATIONS\n"
        + prose(15),
        "IV/. RESULTS\n" + prose(15) + "\nV/. CONCLUSION AND OUTLOOK\n" + prose(6),
        "ACKNOWLEDGEMENTS\nWe thank the group/.\n" + entries,
    )
    assert_valid(p)
    headings = [s.heading for s in p.sections]
    assert "I I I. SOLUTION OF THE WAVE EQUATIONS" in headings
    assert headings[-1] == UNHEADED_REFERENCES and "[1] N. Author1, Phys." in p.sections[-1].text
    scanner = HeadingScanner()
    scanner.scan("Introduction")
    assert (
        scanner.scan("Forthisproblemwehaveusedharmonicoscillatorwavefunctions", emphasized=True)
        is None
    )


def test_a_slash_is_kept_where_the_document_does_not_slash_its_marks() -> None:
    page = ["Results", "Half the runs (1/2) used and/or skipped http://x.org/a.b steps."]
    assert repair_slashed_marks([page]) == [page]


# BMJ journals print no "Introduction" heading: it runs on from the structured abstract.
def test_an_introduction_without_a_heading_after_a_structured_abstract() -> None:
    p = paper(
        "Iron deficiency after eradication\nABSTRACT\nBackground "
        + prose(8)
        + "\nConclusions "
        + prose(6)
        + "\n"
        + prose(25),
        "METHODS\n" + prose(25) + "\nRESULTS\n" + prose(20) + "\nSummary\n" + prose(20),
        "DISCUSSION\n"
        + prose(20)
        + "\nAcknowledgements\nWe thank the nurses.\nREFERENCES\n"
        + references(12, numbered="{}. "),
    )
    assert_valid(p)
    found = {f.part: f.heading for f in validation_report(p).found}
    assert found["introduction"] == UNHEADED_INTRODUCTION
    assert found["conclusion"] == "DISCUSSION", "a summary box in the results does not close"


def test_numbered_reference_entries_are_not_sections() -> None:
    scanner = HeadingScanner()
    for line in ("1 Introduction", "2 Method", "3 Conclusion", "References"):
        assert scanner.scan(line) is not None
    assert scanner.scan("4. Kudsk KA, Fabian TC, Baum S: Silent deep vein thrombosis") is None
    assert scanner.scan("5 Geerts, W. (2008) A prospective study") is None


def test_affiliation_numbers_do_not_make_an_unnumbered_paper_numbered() -> None:
    """AAAI on arXiv: "1 University of X" and "2 Bloomberg" above an unnumbered outline,
    a numbered list of contributions in the introduction, headings set apart by the layout."""
    pages = [
        "Novelty Controlled Paraphrase Generation\nA. Author1, B. Author2\n"
        "1 University of Illinois, at Chicago\n2 Bloomberg\n"
        + ABSTRACT
        + "\nIntroduction\n"
        + prose(10)
        + "\n1. We propose retrieval augmented prompt tuning for this\n"
        + "2. The framework puts more control over the user in\n"
        + prose(5)
        + "\nProposed Approaches\n"
        + prose(25),
        "Experiments\n" + prose(15) + "\nExperimental Results\n" + prose(20),
        "Related Work\n"
        + prose(10)
        + "\nConclusion\n"
        + prose(5)
        + "\nReferences\n"
        + references(8, numbered=""),
    ]
    marked = frozenset({"ProposedApproaches", "Experiments", "ExperimentalResults"})
    p = parse_paper("aaai.pdf", pages, layout=[PageLayout(emphasized=marked)] * len(pages))
    assert_valid(p)
    tops = [s.heading for s in p.sections if s.level == 1]
    assert "Proposed Approaches" in tops and "Experimental Results" in tops
    assert not any(s.heading.startswith(("1. We", "2. The")) for s in p.sections)


@pytest.mark.parametrize(
    "phrase",
    ["A RESEARCH PROPOSAL ON", "Capstone Proposal", "Propuesta de tesis", "Projet de recherche"],
)
def test_a_document_names_itself_a_proposal(phrase: str) -> None:
    assert SELF_NAMED.search(phrase)


@pytest.mark.parametrize("phrase", ["a region proposal network", "the proposal distribution"])
def test_a_proposal_mentioned_in_a_paper_is_no_self_naming(phrase: str) -> None:
    assert not SELF_NAMED.search(phrase)


def test_a_structured_abstract_without_a_heading_is_the_abstract() -> None:
    front = "Stressful life events and dementia\nA. Author\n"
    labelled = "\n".join(
        f"{label}: " + prose(2).replace("\n", " ")
        for label in ("Background", "Methods", "Results", "Conclusions")
    )
    body = [
        "Introduction\n" + prose(15) + "\nMethods\n" + prose(20),
        "Results\n" + prose(20) + "\nDiscussion\n" + prose(20),
        "References\n" + references(10, numbered=""),
    ]
    assert_valid(paper(front + labelled, *body))
    assert "abstract" in validation_report(paper(front + labelled, *body)).found[0].part
    bare = validation_report(paper(front + prose(4), *body))
    assert bare.missing == ["abstract"], "labels make the abstract, not any text"
