"""``chats:``: presets for chosen chats (a persona, a model, a scope, the plugins used there).

Each entry matches chats with the patterns of ``access.allow`` (``telegram:-1001234``,
``discord:guild:42``, ``*:private``, ...; see :mod:`bot.guardrails.access`). The **first**
matching entry wins; a chat that matches none uses the ``chat:`` defaults. What an admin sets
in the chat itself (``/persona``, ``/scope``) overrides the preset's prompt and scope.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from bot.config.base import Section
from bot.context import Scope


class ChatPreset(Section):
    match: tuple[str, ...] = Field(
        description="the chats it applies to: one pattern or a list, as in access.allow"
    )
    system_prompt: str | None = Field(
        None, description="this chat's system prompt (a /persona set in the chat overrides it)"
    )
    model: str | None = Field(
        None, description="the model for this chat's answers (fallbacks keep their own)"
    )
    scope: Scope | None = Field(
        None, description="how history is shared there (a /scope set in the chat overrides it)"
    )
    plugins: tuple[str, ...] | None = Field(
        None,
        description="module names from plugins: whose tools and commands are offered here;"
        " omitted: all of them, []: none",
    )

    mcp: tuple[str, ...] | None = Field(
        None,
        description="names from mcp.servers whose tools are offered here; omitted: all, []: none",
    )

    knowledge: tuple[str, ...] = Field(
        (), description="names from knowledge.bases searched for this chat's answers"
    )

    daily_tokens_per_chat: int | None = Field(
        None, ge=1, description="this chat's daily budget, instead of limits' (omitted: limits')"
    )
    daily_tokens_per_user: int | None = Field(
        None,
        ge=1,
        description="a person's daily budget in the chats it matches (their usage on that"
        " platform or bot, every chat together), instead of limits' (omitted: limits')",
    )

    ambient: bool = Field(
        False,
        description="answer messages clearly meant for the bot without an @ (see ambient:);"
        " an admin's /ambient on|off in the chat overrides it",
    )

    @field_validator("match", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = (value,)
        if isinstance(value, list | tuple):
            patterns = tuple(str(v).strip() for v in value)
            if not patterns or not all(patterns):
                raise ValueError("give at least one non-empty pattern")
            return patterns
        return value

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name a model, or leave model out to use llm.model")
        return value.strip() if value is not None else None

    @field_validator("plugins", "mcp", "knowledge", mode="before")
    @classmethod
    def _plugin_names(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (value,)
        return value


def unknown_plugins(presets: tuple[ChatPreset, ...], configured: set[str]) -> list[str]:
    """One problem line per preset plugin that ``plugins:`` does not load. The line names the
    entry's position, not its value: config errors never echo what was given."""
    return [
        f"chats.{index}.plugins.{position} is not a module in plugins: (add it there, or drop"
        " it from the preset)"
        for index, preset in enumerate(presets)
        for position, name in enumerate(preset.plugins or ())
        if name not in configured
    ]


def unknown_servers(presets: tuple[ChatPreset, ...], configured: set[str]) -> list[str]:
    """One problem line per preset server that ``mcp.servers`` does not name."""
    return [
        f"chats.{index}.mcp.{position} is not a server in mcp.servers (add it there, or drop"
        " it from the preset)"
        for index, preset in enumerate(presets)
        for position, name in enumerate(preset.mcp or ())
        if name not in configured
    ]


def unknown_bases(presets: tuple[ChatPreset, ...], configured: set[str]) -> list[str]:
    """One problem line per preset base that ``knowledge.bases`` does not declare."""
    return [
        f"chats.{index}.knowledge.{position} is not a base in knowledge.bases (declare it there,"
        " or drop it from the preset)"
        for index, preset in enumerate(presets)
        for position, name in enumerate(preset.knowledge)
        if name not in configured
    ]
