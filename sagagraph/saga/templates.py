"""Prompt templates shipped as package data: ``<package>/prompts/<name>.txt``.

Templates use ``{placeholders}`` filled with :meth:`str.format`; literal braces are doubled.
Values are inserted as they are, so a paper's own braces never break a template. The engine's
router prompts live in ``sagagraph/graph/prompts/``; the paper app's in ``sagagraph/prompts/``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Formatter

from sagagraph.errors import ConfigurationError


@cache
def load_template(package: str, name: str) -> str:
    """The text of ``<package>/prompts/<name>.txt``; ConfigurationError when there is none."""
    path = resources.files(package).joinpath("prompts", f"{name}.txt")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"prompt {name!r}: no file prompts/{name}.txt") from None


def template_fields(package: str, name: str) -> set[str]:
    """The placeholder names a template expects."""
    fields = Formatter().parse(load_template(package, name))
    return {field for _, field, _, _ in fields if field}


def render_template(package: str, name: str, **values: object) -> str:
    """The template ``name`` with its placeholders filled; every placeholder must be given."""
    missing = template_fields(package, name) - values.keys()
    if missing:
        raise ConfigurationError(f"prompt {name!r}: no value for {sorted(missing)}")
    return load_template(package, name).format(**values)
