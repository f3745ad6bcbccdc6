"""The three services a trip touches, each with its own SQLite file: airline, hotel, wallet.

Each store is a local database owned by one participant, as in a real saga: nothing is
atomic across them. Every record carries the ``saga_id`` and is keyed by the step's
idempotency key, so a step that runs again after a crash finds its own record instead of
writing a second one. Cancelling is idempotent too (the seat, room or money comes back once),
and a cancelled key is remembered: a booking that arrives after its cancellation (a slow call
that timed out, then landed) is refused with ``CompensatedKeyError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples.shared import SqliteStore
from sagagraph import CompensatedKeyError


class SoldOut(Exception):
    """No seat or room left."""


class InsufficientFunds(Exception):
    """The wallet cannot pay; retrying does not help."""


class ServiceUnavailable(ConnectionError):
    """A service hiccup worth retrying."""


class Airline(SqliteStore):
    """Flights with a number of free seats, and the bookings sagas made on them."""

    schema = """
        CREATE TABLE IF NOT EXISTS flights (
            flight TEXT PRIMARY KEY, seats_free INTEGER NOT NULL CHECK (seats_free >= 0),
            price_cents INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS bookings (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, flight TEXT, traveller TEXT,
            price_cents INTEGER, status TEXT NOT NULL CHECK (status IN ('booked', 'cancelled')));
    """
    records_table = "bookings"

    def add_flight(self, flight: str, seats: int, price_cents: int) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO flights VALUES (?, ?, ?)", (flight, seats, price_cents)
            )

    def seats_free(self, flight: str) -> int:
        with self.transaction() as conn:
            row = conn.execute("SELECT seats_free FROM flights WHERE flight = ?", (flight,))
            return int(row.fetchone()[0])

    def book(self, key: str, saga_id: str, flight: str, traveller: str) -> dict[str, Any]:
        """Book one seat under ``key``; booking the same key again returns the same booking."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM bookings WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "cancelled":
                    raise CompensatedKeyError(f"airline: booking {key} was already cancelled")
                return dict(existing)
            row = conn.execute(
                "SELECT seats_free, price_cents FROM flights WHERE flight = ?", (flight,)
            ).fetchone()
            if row is None:
                raise SoldOut(f"airline: no flight {flight}")
            if row["seats_free"] < 1:
                raise SoldOut(f"airline: flight {flight} is full")
            conn.execute(
                "UPDATE flights SET seats_free = seats_free - 1 WHERE flight = ?", (flight,)
            )
            conn.execute(
                "INSERT INTO bookings VALUES (?, ?, ?, ?, ?, 'booked')",
                (key, saga_id, flight, traveller, row["price_cents"]),
            )
            return dict(conn.execute("SELECT * FROM bookings WHERE key = ?", (key,)).fetchone())

    def cancel(self, key: str, saga_id: str) -> bool:
        """Cancel the booking under ``key`` and free its seat, once. True if a seat came back."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM bookings WHERE key = ?", (key,)).fetchone()
            if existing is None:
                # Nothing was booked, but remember the key so a late booking is refused.
                conn.execute(
                    "INSERT INTO bookings (key, saga_id, status) VALUES (?, ?, 'cancelled')",
                    (key, saga_id),
                )
                return False
            if existing["status"] == "cancelled":
                return False
            conn.execute("UPDATE bookings SET status = 'cancelled' WHERE key = ?", (key,))
            conn.execute(
                "UPDATE flights SET seats_free = seats_free + 1 WHERE flight = ?",
                (existing["flight"],),
            )
            return True


class Hotel(SqliteStore):
    """Hotels with free rooms and a nightly rate, and the reservations sagas made."""

    schema = """
        CREATE TABLE IF NOT EXISTS hotels (
            hotel TEXT PRIMARY KEY, rooms_free INTEGER NOT NULL CHECK (rooms_free >= 0),
            nightly_cents INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS reservations (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, hotel TEXT, guest TEXT, nights INTEGER,
            price_cents INTEGER,
            status TEXT NOT NULL CHECK (status IN ('reserved', 'cancelled')));
    """
    records_table = "reservations"

    def add_hotel(self, hotel: str, rooms: int, nightly_cents: int) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO hotels VALUES (?, ?, ?)", (hotel, rooms, nightly_cents)
            )

    def rooms_free(self, hotel: str) -> int:
        with self.transaction() as conn:
            row = conn.execute("SELECT rooms_free FROM hotels WHERE hotel = ?", (hotel,))
            return int(row.fetchone()[0])

    def reserve(
        self, key: str, saga_id: str, hotel: str, guest: str, nights: int
    ) -> dict[str, Any]:
        """Hold one room for ``nights`` under ``key``; idempotent like :meth:`Airline.book`."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM reservations WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "cancelled":
                    raise CompensatedKeyError(f"hotel: reservation {key} was already cancelled")
                return dict(existing)
            row = conn.execute(
                "SELECT rooms_free, nightly_cents FROM hotels WHERE hotel = ?", (hotel,)
            ).fetchone()
            if row is None or row["rooms_free"] < 1:
                raise SoldOut(f"hotel: no room free at {hotel}")
            conn.execute("UPDATE hotels SET rooms_free = rooms_free - 1 WHERE hotel = ?", (hotel,))
            conn.execute(
                "INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, 'reserved')",
                (key, saga_id, hotel, guest, nights, nights * row["nightly_cents"]),
            )
            return dict(conn.execute("SELECT * FROM reservations WHERE key = ?", (key,)).fetchone())

    def cancel(self, key: str, saga_id: str) -> bool:
        """Cancel the reservation under ``key`` and free its room, once."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM reservations WHERE key = ?", (key,)).fetchone()
            if existing is None:
                conn.execute(
                    "INSERT INTO reservations (key, saga_id, status) VALUES (?, ?, 'cancelled')",
                    (key, saga_id),
                )
                return False
            if existing["status"] == "cancelled":
                return False
            conn.execute("UPDATE reservations SET status = 'cancelled' WHERE key = ?", (key,))
            conn.execute(
                "UPDATE hotels SET rooms_free = rooms_free + 1 WHERE hotel = ?",
                (existing["hotel"],),
            )
            return True


class Wallet(SqliteStore):
    """Travellers' balances and the charges sagas made against them."""

    schema = """
        CREATE TABLE IF NOT EXISTS accounts (
            owner TEXT PRIMARY KEY, balance_cents INTEGER NOT NULL CHECK (balance_cents >= 0));
        CREATE TABLE IF NOT EXISTS charges (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, owner TEXT, amount_cents INTEGER,
            status TEXT NOT NULL CHECK (status IN ('charged', 'refunded')));
    """
    records_table = "charges"

    def open_account(self, owner: str, balance_cents: int) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO accounts VALUES (?, ?)", (owner, balance_cents))

    def balance(self, owner: str) -> int:
        with self.transaction() as conn:
            row = conn.execute("SELECT balance_cents FROM accounts WHERE owner = ?", (owner,))
            return int(row.fetchone()[0])

    def charge(self, key: str, saga_id: str, owner: str, amount_cents: int) -> dict[str, Any]:
        """Take ``amount_cents`` from ``owner`` under ``key``, once; InsufficientFunds if short."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM charges WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "refunded":
                    raise CompensatedKeyError(f"wallet: charge {key} was already refunded")
                return dict(existing)
            row = conn.execute(
                "SELECT balance_cents FROM accounts WHERE owner = ?", (owner,)
            ).fetchone()
            balance = 0 if row is None else int(row["balance_cents"])
            if balance < amount_cents:
                raise InsufficientFunds(
                    f"wallet of {owner} holds {balance / 100:.2f}, "
                    f"the trip costs {amount_cents / 100:.2f}"
                )
            conn.execute(
                "UPDATE accounts SET balance_cents = balance_cents - ? WHERE owner = ?",
                (amount_cents, owner),
            )
            conn.execute(
                "INSERT INTO charges VALUES (?, ?, ?, ?, 'charged')",
                (key, saga_id, owner, amount_cents),
            )
            return dict(conn.execute("SELECT * FROM charges WHERE key = ?", (key,)).fetchone())

    def refund(self, key: str, saga_id: str) -> bool:
        """Give back the charge under ``key``, once. True if money came back."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM charges WHERE key = ?", (key,)).fetchone()
            if existing is None:
                conn.execute(
                    "INSERT INTO charges (key, saga_id, status) VALUES (?, ?, 'refunded')",
                    (key, saga_id),
                )
                return False
            if existing["status"] == "refunded":
                return False
            conn.execute("UPDATE charges SET status = 'refunded' WHERE key = ?", (key,))
            conn.execute(
                "UPDATE accounts SET balance_cents = balance_cents + ? WHERE owner = ?",
                (existing["amount_cents"], existing["owner"]),
            )
            return True


@dataclass(frozen=True)
class TravelStores:
    """The three stores of one travel agency, each in its own file under one folder."""

    airline: Airline
    hotel: Hotel
    wallet: Wallet

    @classmethod
    def open(cls, folder: Path) -> TravelStores:
        folder.mkdir(parents=True, exist_ok=True)
        return cls(
            Airline(folder / "airline.sqlite"),
            Hotel(folder / "hotel.sqlite"),
            Wallet(folder / "wallet.sqlite"),
        )
