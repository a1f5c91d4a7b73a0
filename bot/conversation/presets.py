"""What a chat's settings resolve to: its own overrides, then a ``chats:`` preset, then ``chat:``.

Highest first: what an admin set in the chat (``/persona``, ``/scope``, kept in
:mod:`bot.conversation.preferences`) > the first ``chats:`` entry whose ``match`` fits the chat
(the subjects of :func:`bot.guardrails.access.subjects`, the same patterns as ``access.allow``)
> the ``chat:`` defaults. A preset's ``model`` and ``plugins`` have no in-chat override.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase

from bot.config import ChatPreset, Settings
from bot.context import ChatContext, Scope
from bot.guardrails.access import subjects

__all__ = ["ChatPresets", "Persona", "PersonaSource"]


class PersonaSource(StrEnum):
    CHAT = "chat"  # set in the chat with /persona
    PRESET = "preset"  # a chats: entry's system_prompt
    DEFAULT = "default"  # chat.system_prompt


@dataclass(frozen=True, slots=True)
class Persona:
    """The system prompt a chat uses, and where it comes from (what /persona shows)."""

    text: str
    source: PersonaSource


class ChatPresets:
    """The ``chats:`` entries, asked per message (a few patterns: no cache needed)."""

    def __init__(self, settings: Settings) -> None:
        self._presets = settings.chats
        self._defaults = settings.chat

    def match(self, ctx: ChatContext) -> ChatPreset | None:
        """The first entry that matches ``ctx`` (None: no preset applies)."""
        if not self._presets:
            return None
        names = subjects(ctx)
        for preset in self._presets:
            if any(fnmatchcase(name, pattern) for pattern in preset.match for name in names):
                return preset
        return None

    def scope(self, ctx: ChatContext) -> Scope:
        preset = self.match(ctx)
        if preset is not None and preset.scope is not None:
            return preset.scope
        return self._defaults.default_scope

    def persona(self, ctx: ChatContext, override: str | None) -> Persona:
        if override:
            return Persona(override, PersonaSource.CHAT)
        preset = self.match(ctx)
        if preset is not None and preset.system_prompt is not None:
            return Persona(preset.system_prompt, PersonaSource.PRESET)
        return Persona(self._defaults.system_prompt, PersonaSource.DEFAULT)

    def model(self, ctx: ChatContext) -> str | None:
        """The preset's model for this chat's answers (None: ``llm.model``)."""
        preset = self.match(ctx)
        return preset.model if preset is not None else None

    def plugins(self, ctx: ChatContext) -> frozenset[str] | None:
        """The plugin modules enabled in this chat (None: every configured plugin)."""
        preset = self.match(ctx)
        if preset is None or preset.plugins is None:
            return None
        return frozenset(preset.plugins)

    def mcp_servers(self, ctx: ChatContext) -> frozenset[str] | None:
        """The MCP servers whose tools are offered in this chat (None: every one)."""
        preset = self.match(ctx)
        if preset is None or preset.mcp is None:
            return None
        return frozenset(preset.mcp)

    def knowledge(self, ctx: ChatContext) -> tuple[str, ...]:
        """The knowledge bases the preset binds to this chat (its own bindings come on top)."""
        preset = self.match(ctx)
        return preset.knowledge if preset is not None else ()

    def ambient(self, ctx: ChatContext) -> bool:
        """Whether the preset turns ambient mode on here (an admin's /ambient overrides it)."""
        preset = self.match(ctx)
        return preset is not None and preset.ambient

    def budgets(self, ctx: ChatContext) -> tuple[int | None, int | None]:
        """The preset's daily token budgets here, per chat and per user (None: ``limits:``'s;
        a preset for one of several bots gives that bot budgets of its own)."""
        preset = self.match(ctx)
        if preset is None:
            return None, None
        return preset.daily_tokens_per_chat, preset.daily_tokens_per_user

    def allows_plugin(self, ctx: ChatContext, module: str) -> bool:
        enabled = self.plugins(ctx)
        return enabled is None or module in enabled
