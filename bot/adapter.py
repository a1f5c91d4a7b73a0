"""The adapter seam and how the entry point finds adapters by name.

An adapter module (``adapters.console``, ``adapters.telegram`` ...) exposes
``create_adapter(app) -> Adapter``. The core never imports one directly: the module path comes
from the ``adapters:`` map in config, so ``bot`` stays free of platform code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from bot.errors import ConfigError

if TYPE_CHECKING:
    from bot.app import App


class Adapter(Protocol):
    name: str

    async def run(self) -> None:
        """Serve until :meth:`stop` is called (or the input ends, for the console)."""
        ...

    async def stop(self) -> None:
        """Stop taking new messages; in-flight replies finish."""
        ...


AdapterFactory = Callable[["App"], Adapter]


def load_adapter(name: str, modules: dict[str, str]) -> AdapterFactory:
    module_name = modules.get(name)
    if module_name is None:
        raise ConfigError(f"adapters.{name}: no module configured for adapter {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"adapters.{name}: cannot import {module_name}: {exc}") from exc
    factory = getattr(module, "create_adapter", None)
    if not callable(factory):
        raise ConfigError(f"adapters.{name}: {module_name} has no create_adapter(app)")
    return cast(AdapterFactory, factory)
