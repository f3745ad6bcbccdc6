"""Prompt templates, one ``.txt`` file per agent, shipped as package data.

Templates use ``{placeholders}`` filled with :meth:`str.format`; literal braces are doubled.
Values are inserted as they are, so a paper's own braces never break a template.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Formatter

from sagagraph.errors import ConfigurationError


@cache
def load_prompt(name: str) -> str:
    """The text of ``sagagraph/prompts/<name>.txt``; ConfigurationError when there is none."""
    path = resources.files(__name__).joinpath(f"{name}.txt")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"prompt {name!r}: no file prompts/{name}.txt") from None


def prompt_fields(name: str) -> set[str]:
    """The placeholder names a prompt expects."""
    return {field for _, field, _, _ in Formatter().parse(load_prompt(name)) if field}


def render_prompt(name: str, **values: object) -> str:
    """The prompt ``name`` with its placeholders filled; every placeholder must be given."""
    missing = prompt_fields(name) - values.keys()
    if missing:
        raise ConfigurationError(f"prompt {name!r}: no value for {sorted(missing)}")
    return load_prompt(name).format(**values)
