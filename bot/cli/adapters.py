"""Which adapters ``python -m bot run`` starts: each found by name in the ``adapters:`` map and
created with the running bot's platform seam (:class:`bot.platform.seam.Platform`; the
protocol they implement is :class:`bot.platform.adapter.Adapter`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from bot.errors import ConfigError
from bot.platform.adapter import Adapter, adapter_module
from bot.platform.seam import Platform

__all__ = ["AdapterFactory", "load_adapter"]

AdapterFactory = Callable[[Platform], Adapter]


def load_adapter(name: str, modules: dict[str, str]) -> AdapterFactory:
    module = adapter_module(name, modules)
    factory = getattr(module, "create_adapter", None)
    if not callable(factory):
        raise ConfigError(f"adapters.{name}: {module.__name__} has no create_adapter(platform)")
    return cast(AdapterFactory, factory)
