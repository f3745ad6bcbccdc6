"""The subscription map is derived from a saga's ordered steps."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sagagraph import ConfigurationError
from sagagraph.choreography.topology import (
    EventNames,
    derive_choreography,
    event_names_for,
)
from tests.support.choreo_saga import file_saga


def test_paper_saga_map_is_the_design_table(tmp_path: Path) -> None:
    choreography = derive_choreography(file_saga(tmp_path))
    assert choreography.table() == [
        {
            "agent": "validator",
            "subscribes_to": ["paper_submitted", "review_compensated"],
            "emits_on_success": "validated",
            "emits_on_failure": "validation_compensated",
        },
        {
            "agent": "reviewer",
            "subscribes_to": ["validated", "summary_compensated"],
            "emits_on_success": "reviewed",
            "emits_on_failure": "review_compensated",
        },
        {
            "agent": "summarizer",
            "subscribes_to": ["reviewed"],
            "emits_on_success": "summarized",
            "emits_on_failure": "summary_compensated",
        },
    ]
    assert choreography.completed_event == "summarized"
    assert choreography.rolled_back_event == "validation_compensated"


def test_any_saga_gets_generic_names(tmp_path: Path) -> None:
    definition = file_saga(
        tmp_path, name="food_order", steps=("create_order", "reserve", "pay", "confirm")
    )
    choreography = derive_choreography(definition)
    assert [list(r.subscriptions) for r in choreography.roles] == [
        ["saga_started", "reserve_compensated"],
        ["create_order_done", "pay_compensated"],
        ["reserve_done", "confirm_compensated"],
        ["pay_done"],
    ]
    assert choreography.completed_event == "confirm_done"
    assert choreography.rolled_back_event == "create_order_compensated"
    assert choreography.role("pay").next_step == "confirm"
    assert choreography.role("pay").previous_step == "reserve"


def test_a_single_step_saga_has_no_compensation_trigger(tmp_path: Path) -> None:
    choreography = derive_choreography(file_saga(tmp_path, name="one", steps=("only",)))
    (role,) = choreography.roles
    assert role.subscriptions == ("saga_started",)
    assert role.is_first and role.is_last


def test_a_definition_carries_its_event_names(tmp_path: Path) -> None:
    plain = file_saga(tmp_path, name="trip_test_names", steps=("flight", "hotel"))
    definition = replace(
        plain, event_names={"saga_started": "trip_requested", "flight_done": "flight_booked"}
    )
    assert event_names_for(definition) == EventNames(
        start="trip_requested", done={"flight": "flight_booked"}
    )
    assert event_names_for(plain) == EventNames()
    choreography = derive_choreography(definition)
    assert choreography.role("hotel").subscriptions == ("flight_booked",)
    assert choreography.role("flight").subscriptions == ("trip_requested", "hotel_compensated")


def test_a_rename_of_an_unknown_event_is_refused(tmp_path: Path) -> None:
    plain = file_saga(tmp_path, name="trip_test_names", steps=("flight", "hotel"))
    definition = replace(plain, event_names={"hotle_done": "hotel_booked"})
    with pytest.raises(ConfigurationError, match="unknown events \\['hotle_done'\\]"):
        derive_choreography(definition)


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (EventNames(done={"a": "b_done"}), "used twice: b_done"),
        (EventNames(start="bad.name"), "'bad.name'"),
        (EventNames(compensated={"a": "#"}), "'#'"),
    ],
)
def test_ambiguous_or_unsafe_names_are_refused(
    tmp_path: Path, names: EventNames, message: str
) -> None:
    definition = file_saga(tmp_path, name="ab", steps=("a", "b"))
    with pytest.raises(ConfigurationError, match=message):
        derive_choreography(definition, names)


def test_unknown_agent_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"no step .critic.*validator, reviewer"):
        derive_choreography(file_saga(tmp_path)).role("critic")
