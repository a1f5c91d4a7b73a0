"""Names a package exports but imports only on first use (PEP 562).

``import bot`` and ``from bot.plugins import tool`` must stay light (no database, LLM or
scheduler library), while ``bot.App`` and friends still work as plain attributes. A package
lists where each name lives and installs the two module hooks this returns.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, homes: Mapping[str, str], names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each of ``names`` is imported from
    ``homes[name]`` when first touched and then cached in the package's namespace."""
    namespace = sys.modules[package].__dict__
    exported = frozenset(names)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None or name not in exported:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | exported)

    return __getattr__, __dir__
