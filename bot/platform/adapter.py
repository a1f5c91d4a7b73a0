"""The adapter seam and how the entry point finds adapters by name.

An adapter module (``adapters.console``, ``adapters.telegram`` ...) exposes
``create_adapter(app) -> Adapter``, and optionally ``check_settings(settings)`` and
``diagnose(settings)`` (its platform's rows for ``python -m bot doctor``). The core never
imports one directly: the module path comes from the ``adapters:`` map in config, so ``bot``
stays free of platform code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from pydantic import BaseModel

from bot.errors import ConfigError

if TYPE_CHECKING:
    from bot.app import App
    from bot.config import Settings
    from bot.doctor import Diagnose


class Adapter(Protocol):
    name: str

    async def run(self) -> None:
        """Serve until :meth:`stop` is called (or the input ends, for the console)."""
        ...

    async def stop(self) -> None:
        """Stop taking new messages; in-flight replies finish."""
        ...


AdapterFactory = Callable[["App"], Adapter]


def check_adapter_settings(name: str, settings: Settings) -> BaseModel | None:
    """Let an adapter validate its own config section (``check_settings(settings)``, optional).

    Returns the validated section when the adapter hands it back (``check-config`` prints it).
    """
    module = _module(name, settings.adapters)
    check = getattr(module, "check_settings", None)
    if not callable(check):
        return None
    checked = check(settings)
    return checked if isinstance(checked, BaseModel) else None


def load_adapter(name: str, modules: dict[str, str]) -> AdapterFactory:
    module = _module(name, modules)
    factory = getattr(module, "create_adapter", None)
    if not callable(factory):
        raise ConfigError(f"adapters.{name}: {module.__name__} has no create_adapter(app)")
    return cast(AdapterFactory, factory)


def load_diagnose(name: str, modules: dict[str, str]) -> Diagnose | None:
    """The adapter's ``diagnose(settings)`` for ``doctor``, or None when it has none."""
    diagnose = getattr(_module(name, modules), "diagnose", None)
    return cast("Diagnose", diagnose) if callable(diagnose) else None


def _module(name: str, modules: dict[str, str]) -> ModuleType:
    module_name = modules.get(name)
    if module_name is None:
        raise ConfigError(f"adapters.{name}: no module configured for adapter {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"adapters.{name}: cannot import {module_name}: {exc}") from exc
    return module
