"""The paper app's prompt templates (validator, reviewer, summarizer), one ``.txt`` file per
agent, shipped as package data; the engine's router prompts live in ``sagagraph/graph/prompts``.

Templates use ``{placeholders}`` filled with :meth:`str.format` (:mod:`sagagraph.saga.templates`).
"""

from __future__ import annotations

from sagagraph.saga.templates import load_template, render_template, template_fields

PACKAGE = "sagagraph"
"""The package whose ``prompts/`` folder holds these templates."""


def load_prompt(name: str) -> str:
    """The text of ``sagagraph/prompts/<name>.txt``; ConfigurationError when there is none."""
    return load_template(PACKAGE, name)


def prompt_fields(name: str) -> set[str]:
    """The placeholder names a prompt expects."""
    return template_fields(PACKAGE, name)


def render_prompt(name: str, **values: object) -> str:
    """The prompt ``name`` with its placeholders filled; every placeholder must be given."""
    return render_template(PACKAGE, name, **values)
