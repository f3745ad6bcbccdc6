"""The ``sagagraph`` command.

Exit codes: 0 completed, 3 rolled back, 4 needs an operator, 2 bad usage or unreadable input,
1 unexpected error. Errors are one line on stderr, never a traceback, unless ``--debug``.
Progress goes to stderr, so ``--json`` output on stdout stays clean.

One module per group of commands: ``run``, ``lifecycle`` (status, list, resume, recover,
resolve), ``events`` (choreography agents and event logs), ``explore`` (graph, compare);
``apps`` builds the paper saga from flags, ``output`` prints, ``parser`` declares the verbs.
"""

from sagagraph.cli.entry import main

__all__ = ["main"]
