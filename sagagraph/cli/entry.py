"""``main``: parse, run one command, map errors to one line and an exit code."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from sagagraph.cli.interrupt import SagaInterrupted
from sagagraph.cli.output import (
    EXIT_COMPLETED,
    EXIT_INTERRUPTED,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    emit_error,
)
from sagagraph.cli.parser import build_parser
from sagagraph.errors import SagaGraphError
from sagagraph.redaction import install_log_redaction, redact
from sagagraph.saga.view import describe_error
from sagagraph.telemetry import check_langsmith, configure_tracing, flush_tracing


def configure_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="sagagraph: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    install_log_redaction()  # every log line, ours and the libraries', without secrets
    # Step failures are shown as progress lines; the log repeats them only when debugging.
    # CRITICAL (a compensation gave up) always shows.
    logging.getLogger("sagagraph").setLevel(logging.DEBUG if debug else logging.CRITICAL)
    for noisy in ("httpx", "pypdf", "openai", "aio_pika", "aiormq"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if debug else logging.ERROR)


def interrupted(error: SagaInterrupted | KeyboardInterrupt, as_json: bool = False) -> int:
    saga_id = getattr(error, "saga_id", None)
    if saga_id:
        message = f"interrupted; saga {saga_id} can be continued: sagagraph resume {saga_id}"
    elif isinstance(error, SagaInterrupted):
        message = "interrupted before the saga started: nothing was started, nothing written"
    else:
        message = "interrupted"
    print(f"sagagraph: {message}", file=sys.stderr, flush=True)
    if as_json:
        emit_error(message, EXIT_INTERRUPTED)
    if getattr(error, "abandoned", False):
        # A model call still blocks a worker thread of LangGraph's pool, which a normal exit
        # joins: end now. The saga's checkpoints are committed; the abandoned step re-runs.
        sys.stdout.flush()
        os._exit(EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED


def closed_pipe() -> int:
    """The reader of stdout went away (``| head``): stop quietly, as Unix tools do.

    Python's recipe: point stdout at devnull so the interpreter's final flush does not fail
    again on the closed pipe.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_COMPLETED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (else ``sys.argv``); return its exit code.

    Run as the command itself (no ``argv``), the process ends with that code as soon as the
    command is done, even while a model call a step timed out on still hangs
    (:func:`leave_abandoned_calls`).
    """
    code = run_command(argv)
    if argv is None:
        leave_abandoned_calls(code)
    return code


def leave_abandoned_calls(code: int) -> None:
    """End the process now with ``code`` when calls abandoned by a step timeout still run.

    A normal exit joins the threads that hold them (LangChain's thread pool), which waits
    for the HTTP client's timeout (2 min) or for as long as a server holds the socket. The
    saga is decided and its checkpoints are committed: nothing is left to wait for.
    """
    from sagagraph.saga.execution import abandoned_calls

    if abandoned_calls():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def notice(line: str) -> None:
    """One line on stderr about the set-up (tracing), never a secret."""
    print(f"sagagraph: {redact(line)}", file=sys.stderr, flush=True)


def parse_arguments(argv: Sequence[str] | None) -> Any:
    """The parsed command line; under ``--json`` a usage error also prints its JSON object.

    argparse writes its usage error to stderr and exits with 2; the message is captured on
    the way, so a script that asked for JSON still reads one object on stdout.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            args = build_parser().parse_args(words)
    except SystemExit as stop:
        sys.stderr.write(captured.getvalue())
        if "--json" in words and stop.code not in (0, None):
            last = (captured.getvalue().strip().splitlines() or ["error: bad usage"])[-1]
            message = last.split(" error: ", 1)[-1]
            emit_error(message, stop.code if isinstance(stop.code, int) else EXIT_USAGE)
        raise
    sys.stderr.write(captured.getvalue())
    return args


def run_command(argv: Sequence[str] | None) -> int:
    args = parse_arguments(argv)
    configure_logging(args.debug)
    # Before any command loads LangChain, which reads the LangSmith variables once.
    check_langsmith(notice)
    tracing = configure_tracing(notice)
    try:
        return run_handler(args)
    finally:
        flush_tracing(tracing)


def run_handler(args: argparse.Namespace) -> int:
    """Run the parsed command; map its errors to one line and an exit code."""
    as_json = bool(getattr(args, "json", False))
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        return closed_pipe()
    except SagaGraphError as error:
        if args.debug:
            raise
        message = redact(str(error))
        print(f"sagagraph: error: {message}", file=sys.stderr)
        if as_json:
            emit_error(message, error.exit_code)
        return error.exit_code
    except (SagaInterrupted, KeyboardInterrupt) as error:
        return interrupted(error, as_json)
    except Exception as error:
        if args.debug:
            raise
        message = f"unexpected error: {describe_error(error)}"
        print(f"sagagraph: {message} (--debug shows the traceback)", file=sys.stderr)
        if as_json:
            emit_error(message, EXIT_UNEXPECTED)
        return EXIT_UNEXPECTED
