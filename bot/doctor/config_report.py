"""What ``check-config`` shows: the config as validated, never a value that was not.

The core sections were validated when the config loaded. The ``telegram:``, ``discord:`` and
``http:`` sections belong to their adapters, plugin ``settings:`` to their plugins: each is
shown in the form its owner validated, or only by name with its problems (which name fields,
never values).
A secret typed under a wrong key or given with a wrong type is therefore never printed. Problems
that would stop ``run`` are errors; those of a disabled platform or an optional plugin are
warnings, because ``run`` ignores the one and starts without the other. A ``${VAR}`` that is
not set is one of them (the config loads without its value): a section holding one is not
validated further, as what is left of it is not what ``run`` would read.

Each problem carries its fix, for ``doctor``'s fix line: the one its raiser named
(:class:`~bot.errors.ConfigError`'s ``fix``), else one fitting where the problem is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.config import PlatformSettings, PluginEntry, Settings, UnsetVariable, mask_secrets
from bot.doctor.adapters import check_adapter_settings
from bot.errors import ConfigError
from bot.plugins.loader import PluginError, validated_settings

_OWNED = ("telegram", "discord", "http", "plugins")

CONFIG_FIX = "correct the config (`python -m bot check-config` prints what it read)"


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong (``text``), what to do about it (``fix``), and the one sentence
    ``check-config`` prints (``said``: the error's own, its fix included when it named one)."""

    text: str
    fix: str = CONFIG_FIX
    sentence: str = ""

    @property
    def said(self) -> str:
        return self.sentence or self.text

    @classmethod
    def of(cls, exc: ConfigError) -> Problem:
        if exc.fix:
            return cls(exc.problem, exc.fix, str(exc))
        return cls(str(exc))

    @classmethod
    def unset(cls, variable: UnsetVariable) -> Problem:
        return cls(
            str(variable),
            f"set {variable.name} in the environment the bot runs in (or give the config a "
            f"default: ${{{variable.name}:-...}})",
        )


@dataclass
class ConfigReport:
    data: dict[str, Any]  # printable: validated values only, secrets masked
    warnings: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)


def config_report(settings: Settings) -> ConfigReport:
    report = ConfigReport({})
    needed = settings.unset_serving(settings.enabled_platforms())
    for variable in settings.unset_variables():
        if variable in needed:
            report.errors.append(Problem.unset(variable))
        else:
            unset = Problem.unset(variable)
            text = f"{variable.section} is disabled, so `run` ignores this: {unset.text}"
            report.warnings.append(Problem(text, unset.fix))
    core = settings.model_dump(mode="json", exclude=set(_OWNED))
    owned: dict[str, Any] = {
        "telegram": _platform(settings, "telegram", report),
        "discord": _platform(settings, "discord", report),
        "http": _platform(settings, "http", report),
        "plugins": [
            _plugin(index, entry, settings, report) for index, entry in enumerate(settings.plugins)
        ],
    }
    data = {name: owned[name] if name in owned else core[name] for name in Settings.model_fields}
    report.data = mask_secrets(data)
    try:
        settings.llm.check_key()
    except ConfigError as exc:
        report.errors.append(Problem.of(exc))
    if (crowded := _recall_crowds_history(settings)) is not None:
        report.warnings.append(crowded)
    report.warnings += _presets_for_no_platform(settings, owned)
    return report


def _presets_for_no_platform(settings: Settings, owned: dict[str, Any]) -> list[Problem]:
    """A ``chats:`` pattern whose platform part names no adapter or bot of this config
    (``telgram:-100``, ``telegram.quizz:*``) matches nothing, silently: said here."""
    known = set(settings.adapters)
    for family in ("telegram", "discord"):
        bots = owned.get(family, {}).get("bots") or []
        known |= {f"{family}.{bot['name']}" for bot in bots if isinstance(bot, dict)}
    problems = []
    for index, preset in enumerate(settings.chats):
        for position, pattern in enumerate(preset.match):
            platform = pattern.partition(":")[0]
            if ":" not in pattern or any(c in platform for c in "*?[") or platform in known:
                continue
            problems.append(
                Problem(
                    f"chats.{index}.match.{position} names no platform or bot of this config"
                    f" ({platform!r}): the preset never applies there",
                    f"use one of {', '.join(sorted(known))} before the ':'",
                )
            )
    return problems


def _recall_crowds_history(settings: Settings) -> Problem | None:
    """Recalled lines are kept in the history with their turn (``bot.prompt.recall_budget``):
    a history budget under recall's leaves the window holding recalled lines, not messages."""
    history = settings.history.max_tokens
    if history is None or not settings.memory.enabled:
        return None
    from bot.prompt.recall_budget import recall_cap  # only for a config that caps history

    cap = recall_cap(settings)
    if history >= cap:
        return None
    return Problem(
        f"history.max_tokens ({history:,}) is under recall's cap ({cap:,}, memory.max_tokens):"
        " recalled lines stay in the history with their turn, so the window may hold them and"
        " no message",
        f"raise history.max_tokens to at least {2 * cap:,}, or lower memory.max_tokens",
    )


def _platform(settings: Settings, name: str, report: ConfigReport) -> dict[str, Any]:
    section: PlatformSettings = getattr(settings, name)
    if settings.unset_variables(name) or (not section.enabled and not section.model_extra):
        return {"enabled": section.enabled}
    try:
        checked = check_adapter_settings(name, settings)
    except ConfigError as exc:
        problem = Problem.of(exc)
        if section.enabled:
            report.errors.append(problem)
        else:
            ignored = f"{name} is disabled, so `run` ignores this: "
            report.warnings.append(
                Problem(ignored + problem.text, problem.fix, ignored + problem.said)
            )
        return {"enabled": section.enabled}
    if checked is None:  # an adapter that validates but does not say how: show nothing more
        return {"enabled": section.enabled}
    shown: dict[str, Any] = checked.model_dump(mode="json")
    return shown


def _plugin(
    index: int, entry: PluginEntry, settings: Settings, report: ConfigReport
) -> dict[str, Any]:
    named = {"module": entry.module, "required": entry.required}
    if any(v.overlaps(f"plugins[{index}]") for v in settings.unset_variables("plugins")):
        return named
    try:
        model = validated_settings(entry)
    except PluginError as exc:
        fix = f"correct or remove the plugins: entry {entry.module} (install it if it is missing)"
        if entry.required or settings.plugins_required:
            report.errors.append(Problem(str(exc), fix))
        else:
            report.warnings.append(Problem(f"{exc}; `run` starts without it", fix))
        return named
    shown = model.model_dump(mode="json") if model is not None else {}
    return {"module": entry.module, "settings": shown, "required": entry.required}
