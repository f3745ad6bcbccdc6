"""A 3 s broker cut while an agent works: the agents reconnect, and so does the waiting run."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from sagagraph import StepContext, StepResult
from sagagraph.choreography.runner import run_choreographed_saga
from tests.support.choreo_buses import cleaned_up, unique_amqp_url
from tests.support.choreo_saga import FileStep, file_saga, outputs_of
from tests.support.services import require_rabbitmq
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.rabbitmq


class CutWhileWorking(FileStep):
    """The reviewer: cuts the broker for 3 s in the middle of its work, then finishes."""

    def __init__(self, root: Path, proxy: TcpProxy) -> None:
        super().__init__("reviewer", root)
        self.proxy = proxy
        self.cut_done = threading.Event()

    def execute(self, ctx: StepContext) -> StepResult:
        if not self.cut_done.is_set():
            self.proxy.cut(3.0)
            self.cut_done.set()
            # Still working when the cut ends: the step outlives the outage.
            threading.Event().wait(3.5)
        return super().execute(ctx)


def test_a_three_second_broker_cut_while_an_agent_works(tmp_path: Path) -> None:
    base = require_rabbitmq()
    with TcpProxy(5672) as proxy:
        url = unique_amqp_url(base.replace("127.0.0.1:5672", f"127.0.0.1:{proxy.port}"))
        definition = file_saga(tmp_path / "work")
        reviewer = CutWhileWorking(tmp_path / "work", proxy)
        steps = tuple(
            s if s.name != "reviewer" else dataclasses.replace(s, participant=reviewer)
            for s in definition.steps
        )
        definition = dataclasses.replace(definition, steps=steps)
        with cleaned_up(url, tmp_path):
            view = run_choreographed_saga(definition, {}, "cut-1", url, timeout=120)
    assert reviewer.cut_done.is_set() and proxy.cuts > 0
    assert view["status"] == "completed"
    assert outputs_of(tmp_path / "work", "cut-1") == [
        "reviewer.txt",
        "summarizer.txt",
        "validator.txt",
    ]
