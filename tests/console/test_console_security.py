"""The console is safe by default: loopback, token beyond it, CSRF, origin and host checks,
security headers, and no secret on any page."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.cli import main
from sagagraph.console.security import Guard, is_loopback
from sagagraph.errors import ConfigurationError
from tests.console.conftest import HOST, ORIGIN, PORT, console, csrf_of, view
from tests.support.console_sagas import PAPER, Stores, run

TOKEN = "a-long-enough-console-token"


def test_every_page_carries_the_security_headers(shown: Stores) -> None:
    reply = console(shown).get("/")
    assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_a_foreign_host_is_refused_even_for_reading(shown: Stores) -> None:
    reply = console(shown).get("/", headers={"Host": "evil.example:8765"})
    assert reply.status_code == 421


@pytest.mark.parametrize(
    ("headers", "form", "why"),
    [
        ({"Origin": ORIGIN}, {}, "CSRF token"),
        ({"Origin": ORIGIN}, {"csrf": "forged"}, "CSRF token"),
        ({"Origin": "http://evil.example"}, None, "console's own page"),
        ({}, None, "console's own page"),
    ],
)
def test_a_post_without_the_page_token_or_from_another_site_is_refused(
    acted_on: Stores, headers: dict[str, str], form: dict[str, str] | None, why: str
) -> None:
    client = console(acted_on)
    if form is None:
        form = {"csrf": csrf_of(client.get("/sagas/stuck").text)}
    reply = client.post(
        "/sagas/stuck/actions/retry", data={**form, "who": "x", "why": "y"}, headers=headers
    )
    assert reply.status_code == 403 and why in reply.text
    assert view(acted_on, "stuck")["status"] == "compensation_failed"


def test_with_a_token_actions_need_it_by_form_or_bearer(acted_on: Stores) -> None:
    client = console(acted_on, Guard(HOST, PORT, token=TOKEN))
    page = client.get("/sagas/stuck").text
    assert 'name="token"' in page
    form = {"csrf": csrf_of(page), "who": "ana", "why": "retry it"}
    refused = client.post("/sagas/stuck/actions/retry", data=form, headers={"Origin": ORIGIN})
    assert refused.status_code == 403 and "needs its token" in refused.text
    wrong = {**form, "token": "not-the-token-at-all"}
    refused = client.post("/sagas/stuck/actions/retry", data=wrong, headers={"Origin": ORIGIN})
    assert refused.status_code == 403
    assert view(acted_on, "stuck")["status"] == "compensation_failed"
    by_form = {**form, "token": TOKEN}
    done = client.post("/sagas/stuck/actions/retry", data=by_form, headers={"Origin": ORIGIN})
    assert done.status_code == 303
    # A client holding the token needs no page: the bearer header stands for the CSRF token.
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    done = client.post(
        "/sagas/stuck2/actions/skip", data={"who": "bot", "why": "scripted"}, headers=bearer
    )
    assert done.status_code == 303
    assert view(acted_on, "stuck2")["status"] == "resolved_by_operator"


def test_beyond_loopback_the_console_needs_a_token_file(tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    with pytest.raises(ConfigurationError, match="needs --token-file"):
        Guard.for_binding("0.0.0.0", PORT, None)
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(ConfigurationError, match="at least 16 characters"):
        Guard.for_binding("0.0.0.0", PORT, str(short))
    good = tmp_path / "token"
    good.write_text(TOKEN + "\n")
    assert Guard.for_binding("0.0.0.0", PORT, str(good)).token == TOKEN
    assert Guard.for_binding("127.0.0.1", PORT, None).token is None


def test_the_command_refuses_to_listen_beyond_loopback_without_a_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'x.sqlite'}"
    assert main(["console", "--host", "0.0.0.0", "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "sagagraph: error: --host 0.0.0.0: listening beyond this machine needs --token-file "
        "(actions then ask for its token)"
    )


def test_no_secret_is_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cret-value-of-the-key"
    paper = tmp_path / f"paper-{secret}.md"
    paper.write_text(PAPER.read_text())
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stores = Stores(
        db=f"sqlite:///{tmp_path / 's.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path / "out",
    )
    monkeypatch.setattr("tests.support.console_sagas.PAPER", paper)
    assert run(stores, "leaky") == 0
    # The key becomes a secret of this deployment after the saga stored the name.
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    client = console(stores)
    pages = [client.get(p).text for p in ("/", "/queue", "/sagas/leaky", "/?q=paper")]
    pages.append(client.get("/sagas/leaky/timeline.svg").text)
    assert "paper-" in pages[0] and "paper-" in pages[2]
    for page in pages:
        assert secret not in page
