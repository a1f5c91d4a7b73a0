"""Reading ``config.yaml``: ``${VAR}`` interpolation, validation, errors that name the field."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from bot.config.settings import PlatformSettings, Settings
from bot.errors import ConfigError

CONFIG_ENV_VAR = "PARLOUR_CONFIG"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value: Any, path: str = "") -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string of a parsed YAML tree."""
    if isinstance(value, dict):
        return {k: interpolate(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if default is not None:
            return found or default  # like the shell: unset or empty takes the default
        if found is None:
            raise ConfigError(f"{path}: environment variable {name} is not set")
        return found

    return _VAR.sub(substitute, value)


def describe_errors(
    error: ValidationError, prefix: tuple[str, ...] = (), *, top: str = "(top level)"
) -> list[str]:
    """One line per problem, naming the field and never echoing what was given there.

    A mistyped key is named, without its value (``unknown key telegram.tokn``): that value may
    be the secret meant for the right key. A message that quotes its input (a validator's
    ``unknown time zone '...'``) has the input masked.
    """
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in (*prefix, *item["loc"])) or top
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {where}")
            continue
        message, given = item["msg"], item.get("input")
        for value in _scalars(given):
            if len(value) >= 3 and value in message:
                message = message.replace(value, "***")
        lines.append(f"{where}: {message}")
    return lines


def _scalars(value: Any) -> list[str]:
    """The strings an error's input holds, for masking them out of its message."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _describe(error: ValidationError) -> str:
    return "invalid config: " + "; ".join(describe_errors(error))


def resolve_path(path: str | Path | None) -> Path | None:
    """``--config``, else ``$PARLOUR_CONFIG``, else ``./config.yaml`` if present."""
    if path is not None:
        return Path(path)
    if os.environ.get(CONFIG_ENV_VAR):
        return Path(os.environ[CONFIG_ENV_VAR])
    default = Path("config.yaml")
    return default if default.exists() else None


def load_settings(path: str | Path | None = None) -> Settings:
    """Load and validate the config; every failure is a :class:`ConfigError` naming the field."""
    resolved = resolve_path(path)
    raw: Any = {}
    if resolved is not None:
        try:
            raw = yaml.safe_load(resolved.read_text(encoding="utf-8")) or {}
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {resolved}") from exc
        except yaml.YAMLError as exc:
            # Only the position: the offending line itself may hold a secret.
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "syntax error"
            raise ConfigError(f"{resolved} is not valid YAML{where}: {problem}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {resolved}: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{resolved}: the top level must be a mapping of sections")
    return settings_from_mapping(raw)


def settings_from_mapping(raw: dict[str, Any]) -> Settings:
    try:
        return Settings.model_validate(interpolate(raw))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


PlatformSection = TypeVar("PlatformSection", bound=BaseModel)


def platform_settings(
    settings: Settings, name: str, model: type[PlatformSection]
) -> PlatformSection:
    """Validate an adapter's own section (``telegram:``, ``discord:``) with its model.

    Errors name the field (``telegram.webhook.url: ...``) and never echo a value.
    """
    section: PlatformSettings = getattr(settings, name)
    try:
        return model.model_validate(section.model_dump())
    except ValidationError as exc:
        raise ConfigError("; ".join(describe_errors(exc, (name,)))) from None
