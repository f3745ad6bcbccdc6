"""The offline summary reads as prose: each debris class of PDF text, generated, stays out."""

from __future__ import annotations

import pytest

from sagagraph.agents.offline_summary import offline_summary
from sagagraph.agents.pdf.loader import parse_paper
from sagagraph.agents.words import exact_subset, fit_whole_sentences, split_sentences
from tests.support.output_checks import assert_summary_covers_the_paper, assert_summary_is_prose
from tests.support.synthetic_papers import _sentences

DEBRIS_LINES = [
    "Also, the encoder connects to the decoder through an attention layer in every block.",
    "This shows that the model is better than the others on most of the tasks we tried.",
    "However, the cost grows with the length of the input and the number of layers used.",
    "The loss is the mean 1 |S| ∑ s∈S over every training pair in the batch we sampled.",
    "We report the median time13 over five runs on the same machine and the same data set.",
    "The gating follows a linear transformation of the hidden states, similar to [12].",
    "• A bullet point that lists one of the properties of the proposed saga coordinator.",
]


def _paper_with_debris() -> str:
    prose = _sentences()
    sections = ["Abstract", "1 Introduction", "2 Method", "3 Results", "4 Conclusion"]
    lines = ["A Paper With Debris In Its Text"]
    for n, heading in enumerate(sections):
        lines.append(heading)
        lines += [next(prose) for _ in range(14)]
        lines.append(DEBRIS_LINES[n % len(DEBRIS_LINES)])
        lines.append(DEBRIS_LINES[(n + 3) % len(DEBRIS_LINES)])
        lines.append(
            "Results improve over BM25 (Table 2) vs. the dense retriever of Smith et al. in"
        )
        lines.append("most settings, as Fig. 3 shows for the largest of the three collections.")
    lines.append("References")
    lines += [f"[{i}] A. Author. A paper about sagas, part {i}. 2020." for i in range(1, 8)]
    return "\n".join(lines)


def test_summary_keeps_out_every_debris_class_and_ends_on_a_sentence() -> None:
    paper = parse_paper("debris.txt", [_paper_with_debris()])
    text = offline_summary(paper, 300)
    assert_summary_is_prose(paper, text, 300)
    assert_summary_covers_the_paper(paper, text)
    for debris in ("∑", "time13", "similar to.", "•", "Also, the encoder", "However, the cost"):
        assert debris not in text


def test_abbreviations_do_not_end_sentences() -> None:
    text = (
        "Ours beats BM25 vs. the dense model of Lee et al. on most sets, e.g. NQ. Fig. 3 shows it."
    )
    assert split_sentences(text) == [
        "Ours beats BM25 vs. the dense model of Lee et al. on most sets, e.g. NQ.",
        "Fig. 3 shows it.",
    ]
    assert split_sentences("Details are in Appendix C. We then ask J. Smith.") == [
        "Details are in Appendix C.",
        "We then ask J. Smith.",
    ]


@pytest.mark.parametrize("target", [0, 17, 40, 299])
def test_exact_subset_hits_the_target_or_says_it_cannot(target: int) -> None:
    sizes = [9, 12, 8, 20, 11, 15, 30, 13] * 4
    chosen = exact_subset(sizes, target)
    assert chosen is not None and sum(sizes[i] for i in chosen) == target
    assert exact_subset([10, 20], 15) is None


def test_fitting_keeps_the_draft_and_adds_only_whole_sentences() -> None:
    draft = " ".join(next(_sentences()) for _ in range(1))
    filler = [s for _, s in zip(range(60), _sentences(), strict=False)][1:]
    fitted = fit_whole_sentences(draft, 100, filler)
    assert fitted is not None and len(fitted.split()) == 100
    assert fitted.startswith(draft)
    assert all(s in [draft, *filler] for s in split_sentences(fitted))
