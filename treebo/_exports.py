"""Names that load on first use, for the top-level package.

``treebo --help`` and ``treebo --version`` must answer without importing PyTorch, so
the top level ([`treebo`][treebo]) reads its few names from the loop and the space
only when one is first used: [`lazy_exports()`][treebo._exports.lazy_exports] gives
it a module ``__getattr__`` (PEP 562).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    module_name: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for names defined elsewhere.

    Args:
        module_name: The re-exporting module's ``__name__``.
        exports: ``{name: module that defines it}``.

    Returns:
        ``(__getattr__, __dir__)`` to assign at the module's top level.

    Example:
        >>> getattr_, _ = lazy_exports("m", {"sqrt": "math"})
        >>> getattr_("sqrt")(4.0)
        2.0
    """

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        module = sys.modules.get(module_name)
        if module is not None:
            setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        module = sys.modules.get(module_name)
        return sorted(set(vars(module) if module else ()) | set(exports))

    return __getattr__, __dir__
