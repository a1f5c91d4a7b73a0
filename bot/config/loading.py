"""Reading ``config.yaml``: ``${VAR}`` interpolation, validation, errors that name the field."""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from bot.config.base import ShownValueError, UnsetVariable
from bot.config.settings import PlatformSettings, Settings
from bot.errors import ConfigError

CONFIG_ENV_VAR = "PARLOUR_CONFIG"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Unset:
    """A value that named an unset variable, left out of the tree (see ``interpolate``)."""


_LEFT_OUT = _Unset()


def interpolate(value: Any, path: str = "", *, unset: list[UnsetVariable] | None = None) -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string of a parsed YAML tree.

    A variable that is not set is a :class:`ConfigError`; with ``unset`` given it is recorded
    there instead and the value that named it left out (its key, or its list item), so the
    field takes its default and the commands that do not read it can run.
    """
    if isinstance(value, dict):
        pairs = (
            (k, interpolate(v, f"{path}.{k}" if path else str(k), unset=unset))
            for k, v in value.items()
        )
        return {k: v for k, v in pairs if v is not _LEFT_OUT}
    if isinstance(value, list):
        items = (interpolate(v, f"{path}[{i}]", unset=unset) for i, v in enumerate(value))
        return [v for v in items if v is not _LEFT_OUT]
    if not isinstance(value, str):
        return value
    missing: list[UnsetVariable] = []

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if default is not None:
            return found or default  # like the shell: unset or empty takes the default
        if found is None:
            missing.append(UnsetVariable(path, name))
            return ""
        return found

    result = _VAR.sub(substitute, value)
    if not missing:
        return result
    if unset is None:
        raise ConfigError(str(missing[0]))
    unset.extend(missing)
    return _LEFT_OUT


def describe_errors(
    error: ValidationError,
    prefix: tuple[str, ...] = (),
    *,
    top: str = "(top level)",
    names: frozenset[str] = frozenset(),
) -> list[str]:
    """One line per problem, naming the field and never echoing what was given there.

    A mistyped key is named, without its value (``unknown key telegram.tokn``): that value may
    be the secret meant for the right key. A message that quotes its input (a validator's
    ``must match '...'``) has the input masked, unless the validator said it is never a secret
    (:class:`~bot.config.base.ShownValueError`: ``unknown time zone 'Europe/Berlinn'``).
    """
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in (*prefix, *item["loc"])) or top
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {where}")
            continue
        message, given = item["msg"], item.get("input")
        if item["type"] == "value_error":  # our validators' own words, without pydantic's tag
            message = message.removeprefix("Value error, ")
        if isinstance(item.get("ctx", {}).get("error"), ShownValueError):
            lines.append(f"{where}: {message}")
            continue
        keys = _keys(given) | names  # a value that is also a key's name ("mode: webhook")
        for value in _scalars(given):
            if len(value) >= 3 and value in message and value not in keys:  # whole words:
                message = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", "***", message)
        lines.append(f"{where}: {message}")
    return lines


def error_fixes(error: ValidationError) -> list[str]:
    """The fixes named by the validators that failed (``bot.config.FixableValueError``)."""
    found = (getattr(item.get("ctx", {}).get("error"), "fix", "") for item in error.errors())
    return list(dict.fromkeys(fix for fix in found if isinstance(fix, str) and fix))


def field_names(model: type[BaseModel]) -> frozenset[str]:
    """Every field name of ``model`` and of the models its fields hold: words of the schema,
    never a secret, so an error may say them (``mode is webhook but webhook.url ...``)."""
    found: set[str] = set()
    pending: list[Any] = [model]
    seen: set[Any] = set()
    while pending:
        kind = pending.pop()
        if kind in seen:
            continue
        seen.add(kind)
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            for name, field in kind.model_fields.items():
                found.add(name)
                pending.append(field.annotation)
        else:
            pending.extend(typing.get_args(kind))
    return frozenset(found)


def _keys(value: Any) -> set[str]:
    """The key names an error's input holds (its own field names, not what was given)."""
    if isinstance(value, dict):
        return {str(k) for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list | tuple):
        return {k for v in value for k in _keys(v)}
    return set()


def _scalars(value: Any) -> list[str]:
    """The strings an error's input holds, for masking them out of its message."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _describe(error: ValidationError, unset: list[UnsetVariable]) -> str:
    """Each problem; one at a value left out for its unset variable names the variable."""
    lines = []
    for item, line in zip(error.errors(include_url=False), describe_errors(error), strict=True):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"])
        cause = next((str(u) for u in unset if u.overlaps(where.lstrip("."))), line)
        if cause not in lines:
            lines.append(cause)
    return "invalid config: " + "; ".join(lines)


def resolve_path(path: str | Path | None) -> Path | None:
    """``--config``, else ``$PARLOUR_CONFIG``, else ``./config.yaml`` if present."""
    if path is not None:
        return Path(path)
    if os.environ.get(CONFIG_ENV_VAR):
        return Path(os.environ[CONFIG_ENV_VAR])
    default = Path("config.yaml")
    return default if default.exists() else None


def load_settings(path: str | Path | None = None, *, defer_unset: bool = False) -> Settings:
    """Load and validate the config; every failure is a :class:`ConfigError` naming the field.

    ``defer_unset``: a ``${VAR}`` that is not set is no failure here; its value is left out
    and :meth:`Settings.require_variables` fails the commands that need it (the CLI's way: a
    history report does not need the HTTP tokens).
    """
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
    return settings_from_mapping(raw, defer_unset=defer_unset)


def settings_from_mapping(raw: dict[str, Any], *, defer_unset: bool = False) -> Settings:
    """``raw`` interpolated and validated (``defer_unset``: as :func:`load_settings`)."""
    unset: list[UnsetVariable] = []
    tree = interpolate(raw, unset=unset if defer_unset else None)
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, unset), fix="; ".join(error_fixes(exc))) from None
    settings.record_unset(unset)
    return settings


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
        problems = "; ".join(describe_errors(exc, (name,), names=field_names(model)))
        raise ConfigError(problems, fix="; ".join(error_fixes(exc))) from None
