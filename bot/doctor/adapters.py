"""An adapter module's own checks, found by name like ``create_adapter``: its config section
validated (``check_settings(settings)``, printed by ``check-config``) and its platform's
``doctor`` rows (``diagnose(settings)``). Both are optional."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pydantic import BaseModel

from bot.platform.adapter import adapter_module

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.doctor import Diagnose

__all__ = ["check_adapter_settings", "load_diagnose"]


def check_adapter_settings(name: str, settings: Settings) -> BaseModel | None:
    """Let an adapter validate its own config section; the validated section when the adapter
    hands it back (``check-config`` prints it)."""
    check = getattr(adapter_module(name, settings.adapters), "check_settings", None)
    if not callable(check):
        return None
    checked = check(settings)
    return checked if isinstance(checked, BaseModel) else None


def load_diagnose(name: str, modules: dict[str, str]) -> Diagnose | None:
    """The adapter's ``diagnose(settings)`` for ``doctor``, or None when it has none."""
    diagnose = getattr(adapter_module(name, modules), "diagnose", None)
    return cast("Diagnose", diagnose) if callable(diagnose) else None
