"""A saga factory module that leaves a trace when imported: a test checks that no command
imports a ``module:factory`` it was not given (``IMPORT_TRACE`` names the trace file)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sagagraph.saga.protocol import SagaDefinition
from tests.support.toy_saga import Journal, toy_saga

if os.environ.get("IMPORT_TRACE"):
    Path(os.environ["IMPORT_TRACE"]).write_text("imported")


def factory(saga_input: Mapping[str, Any]) -> SagaDefinition:
    """Three toy steps journaled in ``saga_input["journal"]``."""
    return toy_saga(3, Journal(Path(saga_input["journal"])))
