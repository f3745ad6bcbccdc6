"""Public names imported on first use (PEP 562), for the packages' ``__init__`` modules.

A package lists the modules that define its public names; :func:`lazy_exports` returns the
module-level ``__getattr__`` and ``__dir__`` that import each one when it is first read, so
importing the package loads neither LangGraph nor an optional extra it does not use.
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
