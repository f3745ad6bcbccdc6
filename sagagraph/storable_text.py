"""Text every store can keep: what a checkpoint, an output file or a model request carries.

A lone surrogate is how Python spells a file name's bytes that are not UTF-8
(``os.fsdecode``), or what a broken PDF font map gives: no UTF-8 text can hold one, and
LangGraph's checkpoint serializer stores it as ``?``. A NUL is refused by PostgreSQL's
``jsonb``, where LangGraph's saver keeps a state's strings. One place spells both.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone surrogate."""
    return _SURROGATE.search(text) is not None


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate shown as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def storable_text(text: str) -> str:
    """``text`` with what no checkpointer stores as text replaced by U+FFFD: a NUL, other
    control characters, and lone surrogates. An error message or a reason can hold any of
    them (a server's bytes, a PDF's text); the saga must still record it."""
    return text if text.isprintable() else _UNSTORABLE.sub("\ufffd", text)
