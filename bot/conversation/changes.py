"""How a persona, scope or scheduled-post change reads in the audit trail (``history audit``):
one line that says what changed without carrying a whole prompt into every listing."""

from __future__ import annotations

from bot.context import Scope

__all__ = ["PREVIEW_CHARS", "persona_change", "preview", "schedule_change", "scope_change"]

PREVIEW_CHARS = 60  # of a new system prompt (or a scheduled post's), shown in its audit entry


def preview(text: str) -> str:
    """``text`` on one line, its first :data:`PREVIEW_CHARS` characters (``…`` when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def persona_change(prompt: str | None) -> str:
    """``set (N chars): "first words…"`` for a new prompt, ``reset to the default`` for none."""
    if not prompt:
        return "reset to the default"
    return f'set ({len(prompt)} chars): "{preview(prompt)}"'


def scope_change(old: Scope, new: Scope) -> str:
    return f"{old.value} -> {new.value}"


def schedule_change(
    verb: str, post_id: int, rule: str, prompt: str, thread_id: str | None = None
) -> str:
    """``set #3: every monday 09:00 Europe/Berlin: "summarise last week's…"`` (``verb``: set or
    cancelled; ``in thread 42`` after the number for a post in a topic or thread)."""
    where = "" if thread_id is None else f" in thread {thread_id}"
    return f'{verb} #{post_id}{where}: {rule}: "{preview(prompt)}"'
