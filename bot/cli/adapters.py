"""Which adapters ``python -m bot run`` starts: each found by name in the ``adapters:`` map and
created with the running app (:mod:`bot.platform.adapter` is the seam they implement)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from bot.errors import ConfigError
from bot.platform.adapter import Adapter, adapter_module

if TYPE_CHECKING:
    from bot.app import App

__all__ = ["AdapterFactory", "load_adapter"]

AdapterFactory = Callable[["App"], Adapter]


def load_adapter(name: str, modules: dict[str, str]) -> AdapterFactory:
    module = adapter_module(name, modules)
    factory = getattr(module, "create_adapter", None)
    if not callable(factory):
        raise ConfigError(f"adapters.{name}: {module.__name__} has no create_adapter(app)")
    return cast(AdapterFactory, factory)
