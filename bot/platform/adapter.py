"""The adapter seam, and how an adapter module is found by name.

An adapter module (``adapters.console``, ``adapters.telegram`` ...) exposes
``create_adapter(platform) -> Adapter`` (:class:`bot.platform.seam.Platform`: all it gets of
the bot), and optionally ``check_settings(settings)`` (its config section, validated:
``check-config`` prints it) and ``diagnose(settings)`` (its platform's rows for
``python -m bot doctor``). The core never imports one directly: the module path comes from
the ``adapters:`` map in config, so ``bot`` stays free of platform code. The entry point
(:mod:`bot.cli.adapters`) creates them; ``doctor`` (:mod:`bot.doctor.adapters`) asks their checks.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Protocol

from bot.errors import ConfigError

__all__ = ["Adapter", "adapter_module"]


class Adapter(Protocol):
    name: str

    async def run(self) -> None:
        """Serve until :meth:`stop` is called (or the input ends, for the console)."""
        ...

    async def stop(self) -> None:
        """Stop taking new messages; in-flight replies finish."""
        ...


def adapter_module(name: str, modules: dict[str, str]) -> ModuleType:
    """The module the ``adapters:`` map names for ``name`` (a clear ConfigError otherwise)."""
    module_name = modules.get(name)
    if module_name is None:
        raise ConfigError(f"adapters.{name}: no module configured for adapter {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"adapters.{name}: cannot import {module_name}: {exc}") from exc
    return module
