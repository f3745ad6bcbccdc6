"""What keeps the console safe by default: where it listens, who may act, from which page.

- It listens on 127.0.0.1 unless told otherwise; bound to any other address it refuses to
  start without a token file, and every action then needs that token (``Authorization:
  Bearer TOKEN``, or the form's ``token`` field).
- Every POST carries the page's CSRF token (a random value of this process, put in each form)
  and comes from the console's own origin: an ``Origin`` (or, lacking it, ``Referer``) of
  another site is refused, and so is a ``Host`` that is not the console's own (a DNS
  rebinding page would send its own name).
- Pages may not be framed, scripts come from the console alone, nothing is cached.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sagagraph.errors import ConfigurationError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
MIN_TOKEN_LENGTH = 16
"""A shorter token is refused: it could be guessed."""

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""Headers of every response."""


def is_loopback(host: str) -> bool:
    """True when ``host`` (a name or an address) is this machine only."""
    host = host.strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str | Path) -> str:
    """The token in ``path`` (its first line); ConfigurationError naming the file otherwise."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            f"--token-file {path}: cannot read it ({type(error).__name__})"
        ) from None
    value = token[0].strip() if token else ""
    if len(value) < MIN_TOKEN_LENGTH:
        raise ConfigurationError(
            f"--token-file {path}: the token must be at least {MIN_TOKEN_LENGTH} characters"
        )
    return value


@dataclass(frozen=True)
class Guard:
    """The checks every action passes: the token (when one is set), CSRF, origin and host."""

    host: str
    """The address the console listens on."""
    port: int
    token: str | None = None
    """The action token; None: actions need none (a loopback console only)."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """This process's CSRF token, put in every form."""

    @classmethod
    def for_binding(cls, host: str, port: int, token_file: str | None) -> Guard:
        """The guard of a console on ``host``; ConfigurationError for a non-loopback host
        without a token file."""
        token = read_token(token_file) if token_file else None
        if token is None and not is_loopback(host):
            raise ConfigurationError(
                f"--host {host}: listening beyond this machine needs --token-file "
                "(actions then ask for its token)"
            )
        return cls(host=host, port=port, token=token)

    def allowed_hosts(self) -> set[str]:
        """``Host`` values a request may carry: the bound address and, on loopback, the
        loopback names; each with and without the port."""
        names = {self.host}
        if is_loopback(self.host):
            names |= set(LOOPBACK_NAMES)
        if self.host in ("0.0.0.0", "::"):  # any address: the token is the protection
            return set()
        hosts = set()
        for name in names:
            shown = f"[{name}]" if ":" in name else name
            hosts |= {shown, f"{shown}:{self.port}"}
        return hosts

    def host_ok(self, host_header: str | None) -> bool:
        """True when the request's ``Host`` names this console (DNS rebinding defence)."""
        allowed = self.allowed_hosts()
        return not allowed or (host_header or "").lower() in allowed

    def refusal(self, headers: Mapping[str, str], form: Mapping[str, str]) -> str | None:
        """Why a POST with ``headers`` and ``form`` is refused; None when it may act."""
        host = headers.get("host")
        if not self.host_ok(host):
            return f"refused: Host {host!r} is not this console"
        if self.token is not None and has_bearer(headers, self.token):
            return None  # a client that holds the token: no browser sends it across sites
        origin = headers.get("origin") or headers.get("referer")
        if origin is None or urlsplit(origin).netloc.lower() != (host or "").lower():
            return "refused: the request did not come from the console's own page"
        if not hmac.compare_digest(str(form.get("csrf", "")), self.csrf):
            return "refused: the form's CSRF token is missing or stale (reload the page)"
        if self.token is not None and not hmac.compare_digest(
            presented_token(headers, form), self.token
        ):
            return "refused: this console needs its token for actions (--token-file)"
        return None


def has_bearer(headers: Mapping[str, str], token: str) -> bool:
    """True when the request carries ``Authorization: Bearer TOKEN``."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)


def presented_token(headers: Mapping[str, str], form: Mapping[str, str]) -> str:
    """The token a request presents: ``Authorization: Bearer``, else the form's ``token``."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return str(form.get("token", ""))
