"""``sagagraph delete-namespace``: a RabbitMQ bus namespace's queues and exchanges go, on a
real broker, only with ``--yes``; another namespace's stay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sagagraph.cli import main
from tests.support.choreo_buses import cleaned_up, unique_amqp_url
from tests.support.services import require_rabbitmq

REPO = Path(__file__).resolve().parents[2]
COMPLETE = REPO / "examples" / "papers" / "complete_paper.md"
SAGA = "paper_review"
STEPS = ("validator", "reviewer", "summarizer")

pytestmark = [pytest.mark.rabbitmq, pytest.mark.usefixtures("offline_cli")]


def present(url: str, namespace: str) -> dict[str, bool]:
    """Which of the namespace's queues and exchanges the broker has (passive declarations)."""
    import aio_pika
    from aio_pika.exceptions import ChannelNotFoundEntity

    base = url.split("?", 1)[0]
    queues = [f"{namespace}.log", f"{namespace}.dead"]
    queues += [f"{namespace}.{SAGA}.{step}" for step in STEPS]
    exchanges = [f"{namespace}.dead", f"{namespace}.{SAGA}"]

    async def probe() -> dict[str, bool]:
        found: dict[str, bool] = {}
        connection = await aio_pika.connect(base)
        async with connection:
            for kind, names in (("queue", queues), ("exchange", exchanges)):
                for name in names:
                    channel = await connection.channel()  # a failed check closes its channel
                    try:
                        if kind == "queue":
                            await channel.declare_queue(name, passive=True)
                        else:
                            await channel.declare_exchange(name, passive=True)
                        found[f"{kind} {name}"] = True
                    except ChannelNotFoundEntity:
                        found[f"{kind} {name}"] = False
        return found

    return asyncio.run(probe())


def test_delete_namespace_removes_its_queues_and_exchanges_only_with_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = require_rabbitmq()
    url, other = unique_amqp_url(broker), unique_amqp_url(broker)
    namespace, other_namespace = (u.rsplit("namespace=", 1)[1] for u in (url, other))
    with cleaned_up(url, tmp_path), cleaned_up(other, tmp_path):
        for bus in (url, other):
            common = ["--mode", "choreography", "--bus", bus, "--insecure-bus"]
            assert main(["run", str(COMPLETE), *common]) == 0
        capsys.readouterr()
        assert all(present(url, namespace).values())

        assert main(["delete-namespace", "--bus", url]) == 2
        err = capsys.readouterr().err
        assert f"{namespace}.{SAGA}.reviewer" in err and "--yes" in err
        assert all(present(url, namespace).values()), "nothing goes without --yes"

        assert main(["delete-namespace", "--bus", url, "--yes"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"deleted namespace {namespace!r}")
        assert "guest:guest" not in out
        assert not any(present(url, namespace).values())
        assert all(present(other, other_namespace).values()), "another namespace is left alone"

        # Once more: nothing left to delete is not an error.
        assert main(["delete-namespace", "--bus", url, "--yes"]) == 0


def test_delete_namespace_refuses_a_bus_that_is_not_rabbitmq(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["delete-namespace", "--bus", "sqlite:///events.sqlite", "--yes"]) == 2
    assert "is not RabbitMQ" in capsys.readouterr().err
    assert not Path("events.sqlite").exists()
