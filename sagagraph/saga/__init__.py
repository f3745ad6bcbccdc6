"""The saga kernel: what every coordination style stands on.

The participant contract (:mod:`~sagagraph.saga.protocol`), step execution with its retries
and timeouts (one attempt loop, written once and driven under ``invoke`` and ``ainvoke``:
:mod:`~sagagraph.saga.execution`), the records every style writes, escalation included
(:mod:`~sagagraph.saga.records`), events and the JSON view (:mod:`~sagagraph.saga.view`), the
hooks that observe a run (:mod:`~sagagraph.saga.hooks`), routing and its guard
(:mod:`~sagagraph.saga.routes`), and the names every part shares, saga ids included
(:mod:`~sagagraph.saga.names`). It imports nothing else of sagagraph but ``errors``,
``redaction`` and ``storable_text``.

This package also gives the packages' ``__init__`` modules their public names imported on
first use (PEP 562): each lists the modules that define its public names, and
:func:`lazy_exports` returns the module-level ``__getattr__`` and ``__dir__`` that import each
one when it is first read, so importing a package loads neither LangGraph nor an optional
extra it does not use. It is here, in the package every other one stands on, so that no
package loads a module of its own for it.
"""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``exports`` map each defining
    module to its public names (space-separated) and whose globals are ``namespace``."""
    lazy = {name: module for module, names in exports.items() for name in names.split()}

    def getattr_(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # the next look-up is an ordinary attribute
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *lazy})

    return getattr_, dir_
