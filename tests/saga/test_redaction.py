"""The one redaction: known secrets and credential-shaped text, whatever path a text took."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sagagraph import redaction
from sagagraph.agents.pdf.loader import resolve_pdf_password
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.urls import redact_url
from sagagraph.errors import ConfigurationError
from sagagraph.redaction import redact, redact_value, register_secret
from sagagraph.saga.view import describe_error, make_event


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # Malformed: urllib cannot parse these, the pattern still finds the password.
        ("postgresql://user:p4ss@[::1/db", "postgresql://user:***@[::1/db"),
        ("error: postgresql://u:p@ss@h/db failed", "error: postgresql://u:***@h/db failed"),
        ("amqp://guest:s3cret@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"),
        ("dsn host=h password=hunter22 user=u", "dsn host=h password=*** user=u"),
        ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer ***"),
        ("key sk-live-0123456789 rejected", "key sk-*** rejected"),
        ("sqlite:///a.db and http://host:8080/x@y", "sqlite:///a.db and http://host:8080/x@y"),
    ],
)
def test_credentials_are_found_by_pattern_not_by_parsing(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_a_malformed_postgres_url_error_hides_its_password() -> None:
    url = "postgresql://user:p4ssw0rd@[::1/db"
    assert redact_url(url) == "postgresql://user:***@[::1/db"
    with pytest.raises(ConfigurationError) as refused, open_checkpointer(url):
        pass
    assert "p4ssw0rd" not in str(refused.value)


def test_known_secrets_are_hidden_in_events_errors_and_log_lines(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "plainkey0123456789"  # not key-shaped: only knowing it hides it
    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert key not in make_event("supervisor", "route", "error", 1, f"server said {key}")["detail"]
    assert key not in describe_error(RuntimeError(f"401: bad key {key}"))
    with caplog.at_level(logging.INFO, logger="sagagraph"):
        logging.getLogger("sagagraph").info("router: %s", f"reply quoting {key}")
    assert key not in caplog.text and "reply quoting ***" in caplog.text
    register_secret("registered-value-42")
    assert redact("x registered-value-42 y") == "x *** y"


def test_the_pdf_password_comes_from_a_flag_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SAGAGRAPH_PDF_PASSWORD", raising=False)
    assert resolve_pdf_password() is None
    monkeypatch.setenv("SAGAGRAPH_PDF_PASSWORD", "from-env-1234")
    assert resolve_pdf_password() == "from-env-1234"
    assert redact("wrong: from-env-1234") == "wrong: ***"
    secret_file = tmp_path / "pw.txt"
    secret_file.write_text("from-file-5678\nignored\n")
    assert resolve_pdf_password(password_file=secret_file) == "from-file-5678"
    assert resolve_pdf_password("from-flag-9012") == "from-flag-9012"
    with pytest.raises(ConfigurationError, match="give one of them"):
        resolve_pdf_password("a", secret_file)
    missing = tmp_path / "missing.txt"
    with pytest.raises(ConfigurationError, match=r"--password-file .*missing.txt: cannot read"):
        resolve_pdf_password(password_file=missing)


def test_a_secret_set_or_removed_after_a_redaction_counts_from_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "laterkey0123456789"
    monkeypatch.delenv("LANGSMITH_API_KEY", raising=False)
    assert redact(f"x {key}") == f"x {key}"
    monkeypatch.setenv("LANGSMITH_API_KEY", key)
    assert redact(f"x {key}") == "x ***"
    monkeypatch.setenv("LANGSMITH_API_KEY", "otherkey0123456789")
    assert redact(f"x {key}") == f"x {key}"
    monkeypatch.delenv("LANGSMITH_API_KEY")
    assert redact("x otherkey0123456789") == "x otherkey0123456789"


def test_a_value_is_redacted_with_one_look_at_the_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each step's result is redacted: the environment's secrets are looked up once a value,
    not once for each of its texts (each lookup reads fourteen environment variables)."""
    looks: list[int] = []
    real = redaction.known_secrets

    def counted() -> list[str]:
        looks.append(1)
        return real()

    monkeypatch.setattr(redaction, "known_secrets", counted)
    register_secret("onelook-secret-77")
    value = {"a": "onelook-secret-77", "b": ["two texts", ("three", "four texts")]}
    assert redact_value(value) == {"a": "***", "b": ["two texts", ("three", "four texts")]}
    assert len(looks) == 1
