"""The tests' own check of the broker: a port that is open is not yet a broker that answers."""

from __future__ import annotations

import socket

from tests.support.services import amqp_answers
from tests.support.tcp_listener import listener


def test_a_listener_that_answers_with_a_connection_start_frame_is_a_broker() -> None:
    with listener(b"\x01\x00\x00\x00\x00\x01\x00") as port:
        assert amqp_answers("127.0.0.1", port, patience=0) is None


def test_a_listener_that_closes_without_the_frame_is_named_as_not_answering() -> None:
    with listener(b"") as port:
        reason = amqp_answers("127.0.0.1", port, patience=0)
    assert reason is not None
    assert "something else" in reason and "tried for 0 s" in reason


def test_a_closed_port_says_why() -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    reason = amqp_answers("127.0.0.1", port, patience=0)
    assert reason is not None and "tried for 0 s" in reason
