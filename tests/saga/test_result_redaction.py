"""A secret a step returns (a model quoting the key in a successful answer) is never recorded.

Issue 28 item 4: the engine redacts every StepResult where it records one, whatever style
ran the step, so the saga's state, its events, its view and its checkpoint hold no secret;
the paper app's store redacts every text it writes.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from sagagraph import SagaDefinition, Step, StepContext, StepResult, participant, run_saga
from sagagraph.agents.store import OutputStore
from sagagraph.redaction import MASK, redact_value, register_secret
from tests.support.toy_saga import saga_app

SECRET = "regsecret" + secrets.token_hex(8)
register_secret(SECRET)


def test_redact_value_hides_secrets_at_any_depth_and_keeps_clean_values_as_they_are() -> None:
    clean = {"a": [1, "two", {"three": (4, "five")}]}
    assert redact_value(clean) is clean
    dirty = {"a": [1, f"key {SECRET}", {SECRET: (4, SECRET)}]}
    assert redact_value(dirty) == {"a": [1, f"key {MASK}", {MASK: (4, MASK)}]}


def test_a_secret_in_a_step_result_reaches_no_state_view_or_event() -> None:
    def echo(ctx: StepContext) -> StepResult:
        return StepResult(
            data={"answer": f"the key is {SECRET}", "nested": [{"k": SECRET}]},
            output=f"/out/{SECRET}.txt",
        )

    def stop(ctx: StepContext) -> StepResult:
        return StepResult(halt=True, reason=f"stopped, key {SECRET}")

    definition = SagaDefinition(
        "echo", (Step(participant("echo", echo)), Step(participant("stop", stop), can_halt=True))
    )
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="echo")
        config = {"configurable": {"thread_id": "echo"}}
        state = app.get_state(config).values
    assert view["status"] == "rolled_back", view
    assert SECRET not in json.dumps(view, default=str)
    assert SECRET not in json.dumps(state, default=str)


def test_the_store_writes_no_secret(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    path = store.write("s1:validator", "validation.txt", f"reason: key {SECRET}\n")
    assert path.read_text() == f"reason: key {MASK}\n"
