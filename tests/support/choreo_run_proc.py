"""A ``run`` of the test file saga with its agents in threads, killed on purpose at a boundary.

``python -m tests.support.choreo_run_proc --bus URL --root DIR --state DIR --saga-id ID
[--fail-at STEP] [--kill STEP:MOMENT:NTH | --kill runner:after-start | --kill-after SECONDS]``

``MOMENT`` is where the process gets SIGKILL while STEP's agent handles its NTH event:

- ``during``: inside the step's execute, its file half-written (``SAGAGRAPH_TEST_CRASH``);
- ``after-commit``: the agent's ledger committed its decision; nothing published yet;
- ``after-publish``: its events are on the bus; the log cursor / broker ack not moved yet.

``runner:after-start`` kills the run right after it published the saga's start event.
``--kill-after SECONDS`` SIGKILLs it that long after the run starts, wherever it is then (a
random moment, not a boundary). Prints
the saga's view as JSON when nobody was killed. Nothing here is part of the package.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from sagagraph.choreography.bus import Consumer, EventBus
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.runner import run_choreographed_saga
from tests.support.choreo_saga import CRASH_ENV, file_saga


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillingBus:
    """Delegates to a real bus; SIGKILLs this process at the chosen boundary."""

    def __init__(self, inner: EventBus, step: str, moment: str, nth: int) -> None:
        self.inner = inner
        self.url = inner.url
        self.step, self.moment, self.nth = step, moment, nth
        self.handled = 0
        self.armed = False
        self._patch_settling()

    def _patch_settling(self) -> None:
        """After publish, before the cursor moves (log) or the delivery is acked (RabbitMQ)."""
        inner: Any = self.inner
        consumer_name = f"paper_review.{self.step}"
        if hasattr(inner, "_set_cursor"):
            move = inner._set_cursor

            def set_cursor(consumer: str, position: int) -> None:
                if self.armed and consumer == consumer_name:
                    die()
                move(consumer, position)

            inner._set_cursor = set_cursor
        else:
            # RabbitMQ: deliveries are settled by the consumer module, not by the bus object.
            from sagagraph.choreography import rabbitmq_consumer

            consumer_module: Any = rabbitmq_consumer
            settle = consumer_module._settle

            async def settle_then(incoming: Any, *, ack: bool) -> None:
                if self.armed and ack and incoming.routing_key in self.topics:
                    die()
                await settle(incoming, ack=ack)

            consumer_module._settle = settle_then

    topics: tuple[str, ...] = ()

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        if consumer.name != f"paper_review.{self.step}":
            self.inner.serve(consumer, stop, ready)
            return
        self.topics = consumer.topics

        def handle(message: SagaMessage) -> list[SagaMessage]:
            emitted = consumer.handle(message)
            if emitted:
                self.handled += 1
                if self.handled == self.nth:
                    if self.moment == "after-commit":
                        die()
                    self.armed = self.moment == "after-publish"
            return emitted

        self.inner.serve(dataclasses.replace(consumer, handle=handle), stop, ready)

    def publish(self, messages: Any) -> None:
        self.inner.publish(messages)
        if self.step == "runner" and any(m["kind"] == "start" for m in messages):
            die()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bus", required=True)
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--saga-id", required=True)
    parser.add_argument("--fail-at")
    parser.add_argument("--kill")
    parser.add_argument("--kill-after", type=float)
    args = parser.parse_args()
    bus: Any = open_bus(args.bus, state_dir=args.state)
    if args.kill:
        step, moment, *nth = args.kill.split(":")
        if moment == "during":
            os.environ[CRASH_ENV] = f"{step}:{args.saga_id}"
        else:
            bus = KillingBus(bus, step, moment, int(nth[0]) if nth else 1)
    if args.kill_after is not None:
        timer = threading.Timer(args.kill_after, die)
        timer.daemon = True
        timer.start()
    view = run_choreographed_saga(
        file_saga(args.root), {}, args.saga_id, bus, fail_at=args.fail_at, timeout=60
    )
    print(json.dumps(view))


if __name__ == "__main__":
    main()
