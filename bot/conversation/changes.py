"""How a persona or scope change reads in the audit trail (``history audit``): one line that
says what changed without carrying a whole system prompt into every listing."""

from __future__ import annotations

from bot.context import Scope

__all__ = ["PREVIEW_CHARS", "persona_change", "scope_change"]

PREVIEW_CHARS = 60  # of a new system prompt, shown in its audit entry


def persona_change(prompt: str | None) -> str:
    """``set (N chars): "first words…"`` for a new prompt, ``reset to the default`` for none."""
    if not prompt:
        return "reset to the default"
    flat = " ".join(prompt.split())
    preview = flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"
    return f'set ({len(prompt)} chars): "{preview}"'


def scope_change(old: Scope, new: Scope) -> str:
    return f"{old.value} -> {new.value}"
