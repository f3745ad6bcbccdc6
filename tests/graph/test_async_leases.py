"""Async SQLite sagas hold the same cross-process lease as sync ones: ``<db>.leases``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sagagraph import build_saga_graph, open_checkpointer, resume_saga
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.errors import SagaBusyError
from sagagraph.graph.async_runner import aresume_saga
from sagagraph.graph.leases import saga_lease
from tests.support.toy_saga import HOLDING, Journal, toy_saga

REPO = Path(__file__).resolve().parents[2]

# A process that runs one saga with arun_saga and stops inside its only step, holding the
# saga's lease, until a line arrives on its stdin (or a minute passes).
HOLDER = textwrap.dedent(
    f"""
    import asyncio, sys
    from sagagraph import SagaDefinition, StepResult, build_saga_graph
    from sagagraph.checkpoints.async_factory import open_async_checkpointer
    from sagagraph.graph.async_runner import arun_saga

    class Holds:
        name = "holds"

        def execute(self, ctx):
            raise AssertionError("the async path awaits aexecute")

        async def aexecute(self, ctx):
            print({HOLDING!r}, flush=True)
            loop = asyncio.get_running_loop()
            await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), 60)
            return StepResult()

        def compensate(self, ctx, result):
            pass

    async def main():
        async with open_async_checkpointer(sys.argv[1]) as checkpointer:
            app = build_saga_graph(SagaDefinition.of("held", [Holds()]))
            app = app.compile(checkpointer=checkpointer)
            view = await arun_saga(app, {{}}, saga_id="held")
        print(view["status"], flush=True)

    asyncio.run(main())
    """
)


def test_a_saga_an_async_process_runs_is_refused_to_other_processes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == HOLDING, holder.stderr
        # The sync path on the same file: the lease, and resuming the saga.
        with open_checkpointer(url) as checkpointer:
            busy = pytest.raises(SagaBusyError, match="in use by another process")
            with busy, saga_lease(checkpointer, "held"):
                pass
            app = build_saga_graph(toy_saga(1, Journal(tmp_path / "j.sqlite")))
            with pytest.raises(SagaBusyError, match="in use by another process"):
                resume_saga(app.compile(checkpointer=checkpointer), "held")

        # The async path on the same file, as a second async process would try.
        async def aresume() -> None:
            async with open_async_checkpointer(url) as checkpointer:
                app = build_saga_graph(toy_saga(1, Journal(tmp_path / "j.sqlite")))
                await aresume_saga(app.compile(checkpointer=checkpointer), "held")

        with pytest.raises(SagaBusyError, match="in use by another process"):
            asyncio.run(aresume())

        holder.stdin.write("go\n")
        holder.stdin.flush()
        out, err = holder.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait(30)

    assert holder.returncode == 0, err
    assert out.strip() == "completed"
    # The holder is gone and so is its lease.
    with open_checkpointer(url) as checkpointer, saga_lease(checkpointer, "held"):
        pass


def test_sync_and_async_savers_of_one_file_share_its_leases(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"

    async def scenario() -> None:
        async with open_async_checkpointer(url) as async_saver:
            with open_checkpointer(url) as sync_saver:
                with saga_lease(async_saver, "shared"):
                    with pytest.raises(SagaBusyError), saga_lease(sync_saver, "shared"):
                        pass
                    with saga_lease(sync_saver, "other"):
                        pass
                with saga_lease(sync_saver, "shared"):
                    pass  # released when the async saver's block ended

    asyncio.run(scenario())
    assert (tmp_path / "sagas.sqlite.leases").exists()
