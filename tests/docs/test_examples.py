"""The generic sagas under examples/: travel booking and food order, on real SQLite stores."""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

import sagagraph
from examples.food_order import run as food_run
from examples.food_order.saga import food_order_saga
from examples.food_order.stores import KitchenStores
from examples.travel_booking import run as travel_run
from examples.travel_booking.saga import travel_booking_saga
from examples.travel_booking.stores import Airline, Hotel, ServiceUnavailable, TravelStores
from sagagraph import (
    CompensatedKeyError,
    SagaDefinition,
    StepContext,
    StepResult,
    build_saga_graph,
    new_saga_id,
    open_checkpointer,
    resume_saga,
    run_saga,
    saga_config,
)
from tests.support.toy_saga import SimulatedCrash

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRAVEL_STEPS = ["book_flight", "reserve_hotel", "charge_wallet"]
FOOD_STEPS = ["create_order", "reserve_inventory", "make_payment", "confirm_order"]
ADA: dict[str, Any] = {"traveller": "ada", "flight": "SG-101", "hotel": "harbour-view", "nights": 3}
BOB: dict[str, Any] = {**ADA, "traveller": "bob"}
CAROL: dict[str, Any] = {
    "customer": "carol",
    "items": {"margherita": 2, "tiramisu": 1},
    "card": "carol-visa",
}
DAN: dict[str, Any] = {"customer": "dan", "items": {"margherita": 3}, "card": "dan-visa"}
TRIP_CENTS = 42_000 + 3 * 9_500


@contextmanager
def compiled(
    definition: SagaDefinition, url: str = "memory://"
) -> Iterator[CompiledStateGraph[Any, Any, Any, Any]]:
    with open_checkpointer(url) as checkpointer:
        yield build_saga_graph(definition).compile(checkpointer=checkpointer)


@pytest.fixture
def travel(tmp_path: Path) -> TravelStores:
    return travel_run.open_demo_stores(tmp_path / "travel")


@pytest.fixture
def kitchen(tmp_path: Path) -> KitchenStores:
    return food_run.open_demo_stores(tmp_path / "kitchen")


def statuses(rows: list[dict[str, Any]]) -> list[str]:
    return [row["status"] for row in rows]


# --- travel booking ---------------------------------------------------------------------------


def test_a_trip_that_can_be_paid_commits_every_booking(
    travel: TravelStores, checkpointer_url: str
) -> None:
    saga_id = new_saga_id("trip")
    with compiled(travel_booking_saga(travel), checkpointer_url) as app:
        view = run_saga(app, ADA, saga_id=saga_id)

    assert view["status"] == "completed"
    assert view["completed"] == TRAVEL_STEPS
    assert view["results"]["charge_wallet"] == {"amount_cents": TRIP_CENTS}
    assert travel.airline.seats_free("SG-101") == 119
    assert travel.hotel.rooms_free("harbour-view") == 11
    assert travel.wallet.balance("ada") == 150_000 - TRIP_CENTS
    for store in (travel.airline, travel.hotel, travel.wallet):
        [record] = store.records(saga_id)
        assert record["saga_id"] == saga_id
        assert record["key"].startswith(f"{saga_id}:")


def test_insufficient_funds_cancels_the_hotel_then_the_flight(
    travel: TravelStores, checkpointer_url: str
) -> None:
    saga_id = new_saga_id("trip")
    with compiled(travel_booking_saga(travel), checkpointer_url) as app:
        view = run_saga(app, BOB, saga_id=saga_id)

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["charge_wallet", "reserve_hotel", "book_flight"]
    assert view["failure"]["step"] == "charge_wallet"
    assert view["failure"]["error"].startswith("InsufficientFunds: wallet of bob holds 300.00")
    assert view["failure"]["attempts"] == 1, "an empty wallet is not worth a retry"
    assert view["completed"] == [] and view["outputs"] == {}
    # Everything bob took came back; nothing was charged.
    assert travel.airline.seats_free("SG-101") == 120
    assert travel.hotel.rooms_free("harbour-view") == 12
    assert travel.wallet.balance("bob") == 30_000
    assert statuses(travel.airline.records(saga_id)) == ["cancelled"]
    assert statuses(travel.hotel.records(saga_id)) == ["cancelled"]
    [charge] = travel.wallet.records(saga_id)
    assert charge["status"] == "refunded" and charge["amount_cents"] is None  # key remembered


def test_a_service_hiccup_is_retried_by_the_steps_policy(tmp_path: Path) -> None:
    class FlakyAirline(Airline):
        calls = 0

        def book(self, key: str, saga_id: str, flight: str, traveller: str) -> dict[str, Any]:
            FlakyAirline.calls += 1
            if FlakyAirline.calls == 1:
                raise ServiceUnavailable("airline: 503")
            return super().book(key, saga_id, flight, traveller)

    stores = travel_run.open_demo_stores(tmp_path)
    flaky = TravelStores(FlakyAirline(stores.airline.path), stores.hotel, stores.wallet)
    with compiled(travel_booking_saga(flaky)) as app:
        view = run_saga(app, ADA, saga_id="flaky")

    assert view["status"] == "completed"
    flight = [(e["outcome"], e["attempt"]) for e in view["events"] if e["step"] == "book_flight"]
    assert flight == [("retry", 1), ("ok", 2)]
    assert stores.airline.seats_free("SG-101") == 119


def test_a_trip_killed_inside_the_charge_resumes_and_charges_once(
    travel: TravelStores, checkpointer_url: str
) -> None:
    class DyingHotel(Hotel):
        """Writes the reservation, then the process 'dies' once before the step returns."""

        died = False

        def reserve(
            self, key: str, saga_id: str, hotel: str, guest: str, nights: int
        ) -> dict[str, Any]:
            reservation = super().reserve(key, saga_id, hotel, guest, nights)
            if not DyingHotel.died:
                DyingHotel.died = True
                raise SimulatedCrash("power cut after the reservation was written")
            return reservation

    dying = TravelStores(travel.airline, DyingHotel(travel.hotel.path), travel.wallet)
    definition = travel_booking_saga(dying)
    saga_id = new_saga_id("trip")
    with open_checkpointer(checkpointer_url) as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        with pytest.raises(SimulatedCrash):
            run_saga(app, ADA, saga_id=saga_id)
        assert app.get_state(saga_config(saga_id)).next == ("reserve_hotel",)
        fresh = build_saga_graph(definition).compile(checkpointer=checkpointer)
        view = resume_saga(fresh, saga_id)

    assert view["status"] == "completed"
    assert travel.hotel.rooms_free("harbour-view") == 11, "the re-run found its reservation"
    assert travel.airline.seats_free("SG-101") == 119, "the flight was not booked again"
    assert travel.wallet.balance("ada") == 150_000 - TRIP_CENTS
    assert len(travel.hotel.records(saga_id)) == 1


def test_concurrent_trips_never_touch_each_others_records(travel: TravelStores) -> None:
    meet = threading.Barrier(2)

    class MeetingHotel(Hotel):
        """Both sagas reach the hotel before either goes on: they are in flight together."""

        def reserve(
            self, key: str, saga_id: str, hotel: str, guest: str, nights: int
        ) -> dict[str, Any]:
            meet.wait(10)
            return super().reserve(key, saga_id, hotel, guest, nights)

    stores = TravelStores(travel.airline, MeetingHotel(travel.hotel.path), travel.wallet)
    views: dict[str, dict[str, Any]] = {}
    with compiled(travel_booking_saga(stores)) as app:
        threads = [
            threading.Thread(target=lambda t=trip, n=name: views.__setitem__(n, run_saga(app, t)))
            for name, trip in (("ada", ADA), ("bob", BOB))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    assert views["ada"]["status"] == "completed"
    assert views["bob"]["status"] == "rolled_back"
    ada, bob = views["ada"]["saga_id"], views["bob"]["saga_id"]
    for store, kept in ((travel.airline, "booked"), (travel.hotel, "reserved")):
        assert statuses(store.records(ada)) == [kept]
        assert statuses(store.records(bob)) == ["cancelled"]
    assert statuses(travel.wallet.records(ada)) == ["charged"]
    assert travel.airline.seats_free("SG-101") == 119
    assert travel.wallet.balance("ada") == 150_000 - TRIP_CENTS
    assert travel.wallet.balance("bob") == 30_000


# --- food order -------------------------------------------------------------------------------


def test_an_order_that_is_paid_is_confirmed(kitchen: KitchenStores, checkpointer_url: str) -> None:
    saga_id = new_saga_id("order")
    with compiled(food_order_saga(kitchen), checkpointer_url) as app:
        view = run_saga(app, CAROL, saga_id=saga_id)

    assert view["status"] == "completed"
    assert view["completed"] == FOOD_STEPS
    assert kitchen.orders.status(f"{saga_id}:create_order") == "confirmed"
    assert kitchen.inventory.on_hand("margherita") == 18
    assert kitchen.payments.spent("carol-visa") == 2 * 1_150 + 650


def test_a_declined_payment_releases_inventory_then_cancels_and_never_confirms(
    kitchen: KitchenStores, checkpointer_url: str
) -> None:
    saga_id = new_saga_id("order")
    with compiled(food_order_saga(kitchen), checkpointer_url) as app:
        view = run_saga(app, DAN, saga_id=saga_id)

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["make_payment", "reserve_inventory", "create_order"]
    assert view["failure"]["error"].startswith("PaymentDeclined:")
    assert "confirm_order" not in {e["step"] for e in view["events"]}
    assert kitchen.orders.status(f"{saga_id}:create_order") == "cancelled"
    assert kitchen.inventory.on_hand("margherita") == 20
    assert statuses(kitchen.inventory.records(saga_id)) == ["released"]
    assert kitchen.payments.spent("dan-visa") == 0


# --- the stores' idempotency, through the participants ------------------------------------------


@pytest.mark.parametrize("example", ["travel", "food"])
def test_re_running_steps_and_compensations_takes_effect_once(
    example: str, travel: TravelStores, kitchen: KitchenStores
) -> None:
    """Execute each committed step again, compensate each twice, then try a late write."""
    if example == "travel":
        definition, saga_input = travel_booking_saga(travel), ADA

        def footprint() -> tuple[int, ...]:
            return (
                travel.airline.seats_free("SG-101"),
                travel.hotel.rooms_free("harbour-view"),
                travel.wallet.balance("ada"),
            )
    else:
        definition, saga_input = food_order_saga(kitchen), CAROL

        def footprint() -> tuple[int, ...]:
            return (
                kitchen.inventory.on_hand("margherita"),
                kitchen.inventory.on_hand("tiramisu"),
                kitchen.payments.spent("carol-visa"),
            )

    before = footprint()
    with compiled(definition) as app:
        view = run_saga(app, saga_input, saga_id="again")
    after = footprint()
    results = {s: StepResult(data=d) for s, d in view["results"].items()}

    def ctx(step: str) -> StepContext:
        earlier = {s: r for s, r in results.items() if s != step}
        return StepContext("again", step, saga_input, earlier, 2, definition.deps)

    for step in definition.steps:
        again = step.participant.execute(ctx(step.name))
        assert dict(again.data) == view["results"][step.name]
    assert footprint() == after, "a re-run finds its records instead of writing new ones"

    for step in reversed(definition.steps):
        step.participant.compensate(ctx(step.name), results[step.name])
        step.participant.compensate(ctx(step.name), None)
    assert footprint() == before, "each undo took effect exactly once"

    for step in definition.steps:  # a late forward write after the undo is refused
        with pytest.raises(CompensatedKeyError):
            step.participant.execute(ctx(step.name))


# --- run.py and the public API ------------------------------------------------------------------


def test_travel_run_prints_both_trips_step_by_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert travel_run.main(tmp_path) == 0
    out = capsys.readouterr().out

    first, second = out.split("--- Trip 2")
    assert "status: completed" in first and "rolled_back" not in first
    assert "status: rolled_back" in second
    lines = second.splitlines()
    undo = [line.split()[1] for line in lines if " compensate " in line]
    assert undo == ["charge_wallet", "reserve_hotel", "book_flight"]
    assert any("InsufficientFunds" in line for line in lines)
    assert "compensated, in this order: charge_wallet, reserve_hotel, book_flight" in second
    for name in ("airline", "hotel", "wallet", "sagas"):
        assert (tmp_path / f"{name}.sqlite").is_file()


def test_food_run_prints_both_orders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert food_run.main(tmp_path) == 0
    out = capsys.readouterr().out
    first, second = out.split("--- Order 2")
    assert "confirm_order" in first
    assert "confirm_order" not in second
    assert "compensated, in this order: make_payment, reserve_inventory, create_order" in second


@pytest.mark.parametrize("router", ["deterministic", "llm"])
def test_travel_swarm_run_books_one_trip_and_undoes_the_other_tool_by_tool(
    router: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from examples.travel_swarm import run as swarm_run

    assert swarm_run.main(tmp_path, router=router) == 0
    printed = capsys.readouterr().out
    assert "compensated, in this order: billing, hotel, flight" in printed
    assert "partners as they began: True" in printed
    assert "late booking refused" in printed


def test_travel_run_leaves_nothing_behind_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert travel_run.main() == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "source",
    sorted(
        [
            *EXAMPLES.glob("travel_booking/*.py"),
            *EXAMPLES.glob("food_order/*.py"),
            *EXAMPLES.glob("travel_swarm/*.py"),
        ]
    ),
)
def test_examples_use_only_the_public_api(source: Path) -> None:
    tree = ast.parse(source.read_text(), filename=str(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sagagraph"):
            assert node.module == "sagagraph", f"{source.name}: imports {node.module}"
            for alias in node.names:
                assert alias.name in sagagraph.__all__, f"{source.name}: {alias.name} not public"
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith("sagagraph."), f"{source.name}: {alias.name}"
