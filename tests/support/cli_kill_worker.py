"""``sagagraph`` itself, killed from inside its checkpointer: for kill windows of CLI runs.

::

    python -m tests.support.cli_kill_worker count FILE -- ARGS  # run; write the call counts
    python -m tests.support.cli_kill_worker kill METHOD N HOW -- ARGS  # die after call N

``ARGS`` are the command line of ``sagagraph`` (``run PAPER --router llm ...``). Every
checkpointer the command opens is armed (:mod:`tests.support.kill_saver`) with one shared
counter, so ``N`` counts the command's ``put`` or ``put_writes`` calls from its start, as
``count`` wrote them for a whole run. Test-only: the product has no such hook.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from sagagraph.checkpoints import factory
from tests.support.kill_saver import CallCounter, How, Method, arm


def main(argv: list[str]) -> int:
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1 :]
    counter = CallCounter()
    kill_at: tuple[Method, int] | None = None
    how: How = "exit"
    if head[0] == "kill":
        kill_at = (cast(Method, head[1]), int(head[2]))
        how = cast(How, head[3])
    original = factory.open_checkpointer

    @contextmanager
    def armed(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with original(*args, **kwargs) as saver:
            arm(saver, counter, kill_at=kill_at, how=how)
            yield saver

    factory.open_checkpointer = armed  # type: ignore[assignment]
    from sagagraph.cli import main as cli_main

    code = cli_main(command)
    if head[0] == "count":
        with open(head[1], "w") as out:
            json.dump(counter.counts, out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
