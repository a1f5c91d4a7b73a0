"""What ``check-config`` shows: the config as validated, never a value that was not.

The core sections were validated when the config loaded. The ``telegram:``, ``discord:`` and
``http:`` sections belong to their adapters, plugin ``settings:`` to their plugins: each is
shown in the form its owner validated, or only by name with its problems (which name fields,
never values).
A secret typed under a wrong key or given with a wrong type is therefore never printed. Problems
that would stop ``run`` are errors; those of a disabled platform or an optional plugin are
warnings, because ``run`` ignores the one and starts without the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.app import check_llm_settings
from bot.config import PlatformSettings, PluginEntry, Settings, mask_secrets
from bot.doctor.adapters import check_adapter_settings
from bot.errors import ConfigError
from bot.plugins.loader import PluginError, validated_settings

_OWNED = ("telegram", "discord", "http", "plugins")


@dataclass
class ConfigReport:
    data: dict[str, Any]  # printable: validated values only, secrets masked
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def config_report(settings: Settings) -> ConfigReport:
    report = ConfigReport({})
    core = settings.model_dump(mode="json", exclude=set(_OWNED))
    owned: dict[str, Any] = {
        "telegram": _platform(settings, "telegram", report),
        "discord": _platform(settings, "discord", report),
        "http": _platform(settings, "http", report),
        "plugins": [
            _plugin(entry, settings.plugins_required, report) for entry in settings.plugins
        ],
    }
    data = {name: owned[name] if name in owned else core[name] for name in Settings.model_fields}
    report.data = mask_secrets(data)
    try:
        check_llm_settings(settings)
    except ConfigError as exc:
        report.errors.append(str(exc))
    return report


def _platform(settings: Settings, name: str, report: ConfigReport) -> dict[str, Any]:
    section: PlatformSettings = getattr(settings, name)
    if not section.enabled and not section.model_extra:
        return {"enabled": False}
    try:
        checked = check_adapter_settings(name, settings)
    except ConfigError as exc:
        if section.enabled:
            report.errors.append(str(exc))
        else:
            report.warnings.append(f"{name} is disabled, so `run` ignores this: {exc}")
        return {"enabled": section.enabled}
    if checked is None:  # an adapter that validates but does not say how: show nothing more
        return {"enabled": section.enabled}
    shown: dict[str, Any] = checked.model_dump(mode="json")
    return shown


def _plugin(entry: PluginEntry, all_required: bool, report: ConfigReport) -> dict[str, Any]:
    try:
        model = validated_settings(entry)
    except PluginError as exc:
        if entry.required or all_required:
            report.errors.append(str(exc))
        else:
            report.warnings.append(f"{exc}; `run` starts without it")
        return {"module": entry.module, "required": entry.required}
    settings = model.model_dump(mode="json") if model is not None else {}
    return {"module": entry.module, "settings": settings, "required": entry.required}
