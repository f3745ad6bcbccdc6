"""A scripted model for long papers: it reviews the pages it is shown, quoting them.

Used by tests/agents/test_long_papers.py and ``python -m bench.review_quality --long-paper``
with the scripted OpenAI-compatible server (tests/support/openai_server.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.support.openai_server import Reply, quoted, request_text, structured, wants_schema

INVENTED = "our method reaches 99% accuracy on the public PaperBench benchmark"
"""A quote no paper prints: the quote check must drop the point that carries it."""
_PAGE = re.compile(r"\[page (\d+)\]\n")


def shown_pages(text: str) -> list[tuple[int, str]]:
    """The ``[page N]`` pages a request shows, with their text."""
    body = text.split("<paper>", 1)[-1].split("</paper>", 1)[0]
    marks = list(_PAGE.finditer(body))
    return [
        (int(m.group(1)), body[m.end() : marks[i + 1].start() if i + 1 < len(marks) else None])
        for i, m in enumerate(marks)
    ]


def sentences_on(page: str) -> list[str]:
    return [s for s in re.findall(r"[A-Z][a-z][^.?!\n]{40,140}[.]", page) if "  " not in s]


def reviewing_model(calls: list[str], invent: bool = True) -> Callable[[dict[str, Any]], Reply]:
    """A model that reviews what it is shown, quoting it (and, with ``invent``, one quote the
    paper never printed), and combines review points as asked; ``calls`` records what each
    review request was (``whole``, ``part``, ``reduce``)."""

    def respond(request: dict[str, Any]) -> Reply:
        text = request_text(request)
        kind = wants_schema(request)
        if kind == "Summary":
            return structured(request, {"text": " ".join(["The paper shows a result."] * 60)})
        if "<review_points>" in text:
            calls.append("reduce")
            lines = [json.loads(line) for line in re.findall(r"^\{.*\}$", text, re.M)]
            answer: dict[str, list[dict[str, Any]]] = {}
            for part in ("strengths", "weaknesses", "suggestions"):
                kept = [p for p in lines if p["list"] == part][:4]
                answer[part] = [quoted(p["point"], p["quote"], p["page"]) for p in kept]
            return structured(request, answer)
        calls.append("part" if "is part " in text else "whole")
        points = []
        for page, body in shown_pages(text):
            for sentence in sentences_on(body)[:1]:
                points.append(quoted(f"The passage on page {page} is clear.", sentence, page))
        answer = {
            "strengths": points[0::3] or points[:1],
            "weaknesses": points[1::3] or points[:1],
            "suggestions": [
                *(points[2::3] or points[:1]),
                *([quoted("Invented.", INVENTED, 1)] if invent else []),
            ],
        }
        return structured(request, answer)

    return respond
