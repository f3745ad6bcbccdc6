"""``main``: parse, run one command, map errors to one line and an exit code."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from sagagraph.agents.view import describe_error
from sagagraph.cli.output import EXIT_UNEXPECTED
from sagagraph.cli.parser import build_parser
from sagagraph.errors import SagaGraphError
from sagagraph.redaction import install_log_redaction, redact


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.debug)
    try:
        code: int = args.func(args)
        return code
    except SagaGraphError as error:
        if args.debug:
            raise
        print(f"sagagraph: error: {redact(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            "sagagraph: interrupted; the saga can be resumed (sagagraph resume ID)", file=sys.stderr
        )
        return 130
    except Exception as error:
        if args.debug:
            raise
        print(
            f"sagagraph: unexpected error: {describe_error(error)} (--debug shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_UNEXPECTED
