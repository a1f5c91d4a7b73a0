"""Which chats and servers the config names, for the platform checks (is the bot admin there?).

A chat is configured when it is named exactly (no ``*``) in ``access.allow`` or in a ``chats:``
preset's patterns (the same patterns, see :mod:`bot.guardrails.access`).
"""

from __future__ import annotations

from bot.config import Settings

__all__ = ["configured_patterns", "named_ids"]


def configured_patterns(settings: Settings) -> list[str]:
    """The allow list, then every preset's patterns, in config order, without repeats."""
    found = list(settings.access.allow)
    found += [pattern for preset in settings.chats for pattern in preset.match]
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
