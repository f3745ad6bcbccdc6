"""The ``sagagraph`` command.

Exit codes: 0 completed, 3 rolled back after a failure, 5 halted on purpose (an invalid paper,
or a queued saga cancelled before any step ran), 4 needs an operator, 75 not finished
(``status`` of a running saga; ``recover`` leaving one), 2 bad usage or unreadable input,
1 unexpected error, 130 interrupted. Errors are one line on
stderr, never a traceback, unless ``--debug``. Progress goes to stderr, also under ``--json``,
so the JSON on stdout stays clean.

One module per group of commands: ``run``, ``lifecycle`` (status, resume, recover, resolve),
``listing`` (list), ``events`` (choreography agents and event logs), ``explore`` (graph,
compare); ``apps`` builds the paper saga from flags, ``output`` prints and maps exit codes,
``progress`` and ``interrupt`` keep long work visible and stoppable, ``parser`` declares the
verbs.
"""

from sagagraph.cli.entry import main

__all__ = ["main"]
