"""Which chats and servers the config names, for the platform checks (is the bot admin there?).

A chat is configured when it is named exactly (no ``*``) in ``access.allow`` or in a ``chats:``
preset's patterns (the same patterns, see :mod:`bot.guardrails.access`). ``chats:`` may not
exist in a given config or version: then only the allow list counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bot.config import Settings

__all__ = ["configured_patterns", "named_ids"]


def configured_patterns(settings: Settings) -> list[str]:
    """The allow list, then every preset's patterns, in config order, without repeats."""
    found = list(settings.access.allow)
    found += list(_preset_patterns(getattr(settings, "chats", None)))
    return list(dict.fromkeys(found))


def named_ids(settings: Settings, prefix: str) -> list[int]:
    """The integer ids after ``prefix`` (``"telegram:"``, ``"discord:guild:"``) in the configured
    patterns, in order: ``telegram:-1001234`` names chat -1001234; a wildcard names none."""
    ids: list[int] = []
    for pattern in configured_patterns(settings):
        rest = pattern[len(prefix) :] if pattern.startswith(prefix) else ""
        if rest.lstrip("-").isdigit():
            ids.append(int(rest))
    return list(dict.fromkeys(ids))


def _preset_patterns(presets: Any) -> Iterator[str]:
    """Patterns of ``chats:`` presets: a mapping keyed by pattern, or entries with ``match``."""
    if isinstance(presets, dict):
        for key, entry in presets.items():
            yield str(key)
            yield from _matches(entry)
    elif isinstance(presets, list | tuple):
        for entry in presets:
            yield from _matches(entry)


def _matches(entry: Any) -> Iterator[str]:
    value = entry.get("match") if isinstance(entry, dict) else getattr(entry, "match", None)
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        yield from (str(v) for v in value)
