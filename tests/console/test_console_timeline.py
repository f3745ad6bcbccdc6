"""The SVG timeline of a saga's view: one mark per event, tools, routes, the board, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import pytest

from sagagraph.console.timeline import timeline_svg

SVG = "{http://www.w3.org/2000/svg}"


def event(step: str, action: str, outcome: str = "ok", **more: str) -> dict[str, Any]:
    base = {"ts": "2026-12-05T07:00:00.000Z", "step": step, "action": action}
    return {**base, "outcome": outcome, "attempt": 1, "detail": "", **more}


VIEW: dict[str, Any] = {
    "saga_id": "trip",
    "events": [
        event("flight", "route"),
        event("flight", "tool_call", tool="book_flight"),
        event("flight", "execute"),
        event("hotel", "route", "rejected", detail="not allowed now"),
        event("hotel", "tool_call", "error", tool="book_hotel"),
        event("hotel", "execute", "retry"),
        event("hotel", "execute", "halted"),
        event("flight", "tool_undo", tool="book_flight"),
        event("flight", "compensate"),
        event("saga", "finish"),
    ],
    "board": [
        {
            "topic": "flight",
            "version": 1,
            "status": "active",
            "ts": "2026-12-05T07:00:00.000Z",
            "note": "booked",
        },
        {
            "topic": "flight",
            "version": 2,
            "status": "retracted",
            "ts": "2026-12-05T07:00:01Z",
            "note": "undone",
        },
    ],
}


def parsed(view: Mapping[str, Any]) -> ET.Element:
    return ET.fromstring(timeline_svg(view))


def test_every_event_is_one_mark_on_its_steps_row() -> None:
    svg = parsed(VIEW)
    marks = svg.findall(f"{SVG}g[@class='event']")
    assert [(g.get("data-action"), g.get("data-outcome")) for g in marks] == [
        (e["action"], e["outcome"]) for e in VIEW["events"]
    ]
    texts = [t.text for t in svg.findall(f".//{SVG}text")]
    for row in ("flight", "hotel", "board", "saga"):
        assert row in texts
    assert texts.count("book_flight") == 2 and texts.count("book_hotel") == 1
    # Failed, retried and rejected: a red cross each (the hotel's tool call, retry, route).
    assert len(svg.findall(f".//{SVG}path[@class='mark-failed']")) == 3 + 1  # + the legend's


def test_board_versions_have_a_row_and_the_legend_names_what_is_shown() -> None:
    svg = parsed(VIEW)
    versions = svg.findall(f"{SVG}g[@class='board-version']")
    assert [v.findtext(f"{SVG}text") for v in versions] == ["v1", "v2"]
    assert "flight v2 retracted: undone" in (versions[1].findtext(f"{SVG}title") or "")
    legend = {t.text for t in svg.findall(f"{SVG}text")}
    assert {"tool call", "tool undo", "route accepted", "board version"} <= legend
    assert "needs an operator" not in legend  # nothing escalated


def test_text_is_escaped_and_secrets_are_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "the-secret-key-value")
    view = {
        "saga_id": "x",
        "events": [
            event("<script>", "execute", "error", detail="key the-secret-key-value leaked"),
        ],
    }
    markup = timeline_svg(view)
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert "the-secret-key-value" not in markup
    ET.fromstring(markup)  # still well-formed


def test_a_saga_with_no_events_is_an_empty_picture() -> None:
    svg = parsed({"saga_id": "new", "events": []})
    assert svg.findall(f"{SVG}g[@class='event']") == []


def test_the_legend_draws_the_operator_decision_as_the_chart_does_a_star() -> None:
    view = {"saga_id": "ruled", "events": [event("s1", "execute"), event("s1", "resolve")]}
    svg = timeline_svg(view)
    found = re.search(r"(<[^<>]+/>)<text[^>]*>operator decision</text>", svg)
    assert found, "no legend entry for the operator's decision"
    mark = found.group(1)
    assert mark.startswith("<polygon"), mark
    points = re.search(r'points="([^"]+)"', mark)
    assert points and len(points.group(1).split()) == 10  # the chart's star has ten points
