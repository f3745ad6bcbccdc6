"""The flags several ``sagagraph`` commands share, each declared once with its help text, and
the coordination styles as the CLI names them (the ``--mode`` choices, the label ``run``
announces, the short name ``list`` shows: one table, so no command calls a style by another's
name).

Imports nothing but argparse: the parser is built, and ``--help`` answered, before any
command module (and LangGraph behind it) is loaded.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

PAPER_STEPS = ("validator", "reviewer", "summarizer")
"""The paper saga's steps, what ``agent NAME`` accepts."""
FAIL_AT_STEPS = ("validator", "reviewer", "survey_reviewer", "reproducibility", "summarizer")
"""What ``--fail-at`` accepts: the steps of both pipelines."""
PIPELINES = ("default", "adaptive")
"""What ``--pipeline`` accepts (:data:`sagagraph.agents.paper_saga.PIPELINES`)."""


def pipeline_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pipeline",
        choices=PIPELINES,
        default="default",
        help="default: validator, reviewer, summarizer; adaptive: after the validator, reviewer "
        "or survey_reviewer, then reproducibility for papers that report experiments, then "
        "summarizer",
    )


def router_flag(
    p: argparse.ArgumentParser,
    what: str = "who picks each next step: fixed edges (default) or a chat model behind a guard",
) -> None:
    p.add_argument("--router", choices=("deterministic", "llm"), default="deterministic", help=what)


def fail_at_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--fail-at", metavar="STEP", choices=FAIL_AT_STEPS, help=what)


def router_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--router-attempts",
        type=int,
        metavar="N",
        help="LLM router: proposals asked for per decision, first included (default 2)",
    )
    p.add_argument(
        "--router-fallback",
        choices=("deterministic", "abort"),
        help="LLM router: after N rejected proposals, take the deterministic step (default) "
        "or compensate and stop",
    )


def agents_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agents",
        choices=("auto", "in-process", "external"),
        default="auto",
        help="choreography: run the agents in this process, or use `sagagraph agent` "
        "processes already serving; auto (default): external when all serve, in-process "
        "when none does, refused when only some do",
    )


def url_flag(p: argparse.ArgumentParser, flag: str, what: str) -> None:
    p.add_argument(flag, metavar="URL", help=what)


def db_flag(p: argparse.ArgumentParser) -> None:
    url_flag(p, "--db", "checkpointer URL (default: $SAGAGRAPH_DB or sqlite:///sagagraph.sqlite)")


def bus_flag(p: argparse.ArgumentParser) -> None:
    url_flag(
        p,
        "--bus",
        "event bus URL for choreography "
        "(default: $SAGAGRAPH_BUS, $SAGAGRAPH_AMQP_URL or sqlite:///sagagraph-events.sqlite; "
        "reads beside a PostgreSQL --db consult only a bus so named)",
    )


def bus_key_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bus-key-file",
        metavar="FILE",
        help="file whose first line is the deployment key that signs and checks choreography "
        "events (default: $SAGAGRAPH_BUS_KEY or the file $SAGAGRAPH_BUS_KEY_FILE names)",
    )


def insecure_bus_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--insecure-bus",
        action="store_true",
        help="run choreography agents on RabbitMQ without a bus key: anyone who can publish "
        "on the broker can then drive the sagas",
    )


def queue_flag(p: argparse.ArgumentParser) -> None:
    url_flag(p, "--queue", "work queue URL (default: $SAGAGRAPH_QUEUE or the local RabbitMQ)")


def engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--outputs",
        metavar="DIR",
        help="outputs folder (default: $SAGAGRAPH_OUTPUTS or outputs)",
    )
    p.add_argument(
        "--llm",
        choices=("offline", "openai"),
        help="engine (default: $SAGAGRAPH_LLM; openai if OPENAI_API_KEY is set; else offline)",
    )
    p.add_argument("--model", metavar="NAME", help="chat model name (default: $SAGAGRAPH_MODEL)")


def step_timeout_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--step-timeout",
        metavar="S",
        help="seconds each step may take before it fails (and is retried or compensated); "
        "recorded, so resume and recover use it (default: $SAGAGRAPH_STEP_TIMEOUT or none)",
    )


def json_flag(p: argparse.ArgumentParser, what: str = "print one JSON object on stdout") -> None:
    p.add_argument("--json", action="store_true", help=what)


def debug_flag(p: argparse.ArgumentParser) -> None:
    # Accepted after the verb too (`sagagraph run --debug ...`); listed once, on the main help.
    p.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def saga_id_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("saga_id", metavar="SAGA_ID", help="the saga's id (run prints it first)")


def password_flag(p: argparse.ArgumentParser, what: str = "an encrypted PDF") -> None:
    p.add_argument(
        "--password",
        help=f"password of {what}, never stored or shown (visible in ps: prefer "
        "--password-file or $SAGAGRAPH_PDF_PASSWORD)",
    )
    p.add_argument(
        "--password-file", metavar="FILE", help="file whose first line is the PDF password"
    )


class Mode(NamedTuple):
    """How the CLI names one coordination style."""

    name: str
    """The ``--mode`` value and the view's ``mode`` field."""
    short: str
    """The ``MODE`` column of ``list``."""
    decides: str
    """What picks the next step, as ``run`` announces it (``{router}`` is filled in)."""


ORCHESTRATION = "orchestration"
CHOREOGRAPHY = "choreography"
BLACKBOARD = "blackboard"

_MODES = {
    ORCHESTRATION: Mode(ORCHESTRATION, "orch", "{router} routing"),
    CHOREOGRAPHY: Mode(CHOREOGRAPHY, "choreo", "choreography"),
    BLACKBOARD: Mode(BLACKBOARD, "board", "blackboard, {router} controller"),
}

MODES = tuple(_MODES)
"""The ``--mode`` choices, the default first."""


def run_label(mode: str, router: str) -> str:
    """What ``run`` says coordinates the saga: ``deterministic routing``, ``choreography``,
    ``blackboard, llm controller``."""
    return _MODES[mode].decides.format(router=router)


def short_name(mode: str | None) -> str:
    """The ``list`` column: ``orch``, ``choreo``, ``board`` (an unknown mode as it is)."""
    known = _MODES.get(mode or ORCHESTRATION)
    return known.short if known else str(mode)


NO_REASON_GIVEN = "no reason given"
"""The reason ``cancel`` records when ``--reason`` is left out."""
