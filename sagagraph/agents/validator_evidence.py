"""What the LLM validator sees: evidence of a paper's structure that survives a missed heading.

The outline alone fails when heading detection misses (a model handed an empty outline must
answer "invalid"). So the validator also gets the printed table of contents, the first page
(title block, abstract, the start of the opening section) and the start of the reference list,
or the last page when no list was found. Each piece has its own share of a token budget, so
a 400-page thesis costs the same as a 4-page paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from sagagraph.agents.paper import Paper

CHARS_PER_TOKEN = 4
"""The usual estimate for English text; enough to keep a request within its budget."""
DEFAULT_EVIDENCE_TOKENS = 3_000
"""Tokens of paper evidence one validator request carries (the instructions come on top)."""
_SHARES = {"outline": 0.3, "first_page": 0.45, "references": 0.25}


@dataclass(frozen=True)
class ValidatorEvidence:
    """The parts of a paper the LLM validator is shown, each clipped to its share."""

    outline: str
    """Detected headings with their pages, then the printed table of contents, if any."""
    first_page: str
    """Text of page 1: title, authors, abstract."""
    references: str
    """Start of the reference list (heading and first entries), or of the last page."""
    references_source: str
    """Where ``references`` comes from, for the prompt: a heading and page, or the last page."""


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit] + " [...]"


def validator_evidence(paper: Paper, tokens: int = DEFAULT_EVIDENCE_TOKENS) -> ValidatorEvidence:
    """The evidence for ``paper`` within ``tokens`` tokens (about 4 characters a token)."""
    budget = tokens * CHARS_PER_TOKEN
    outline = paper.outline() or "(no headings found)"
    if paper.toc:
        outline += "\n\nPrinted table of contents:\n" + "\n".join(paper.toc)
    refs = paper.references_section()
    if refs is not None:
        source = f"the reference list ({refs.heading}, p.{refs.page})"
        evidence = f"{refs.heading}\n{refs.text}"
    else:
        source = f"the last page (p.{len(paper.pages)}); no reference list was detected"
        evidence = paper.pages[-1] if paper.pages else ""
    return ValidatorEvidence(
        outline=_clip(outline, int(_SHARES["outline"] * budget)),
        first_page=_clip(
            paper.pages[0] if paper.pages else "", int(_SHARES["first_page"] * budget)
        ),
        references=_clip(evidence, int(_SHARES["references"] * budget)) or "(empty)",
        references_source=source,
    )
