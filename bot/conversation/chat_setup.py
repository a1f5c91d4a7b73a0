"""Whose conversation a message belongs to, and the chat's settings an admin changes.

The scope (``/scope``) and the system prompt (``/persona``) resolve as the chat's own override,
then a ``chats:`` preset, then ``chat:`` (:mod:`bot.conversation.presets`); changes are written
to the audit trail with who made them. A base of :class:`~bot.conversation.service.ChatService`.
"""

from __future__ import annotations

from bot.context import ChatContext, Scope
from bot.conversation.changes import persona_change, scope_change
from bot.conversation.preferences import Preferences
from bot.conversation.presets import ChatPresets, Persona
from bot.storage.audit import AuditTrail
from bot.values import AuditAction

__all__ = ["ChatSetup"]


class ChatSetup:
    def __init__(self, prefs: Preferences, presets: ChatPresets, audit: AuditTrail) -> None:
        self.prefs = prefs
        self.presets = presets
        self._audit = audit  # who changed what: the store's audit trail

    def scope_for(self, ctx: ChatContext) -> Scope:
        return self.prefs.scope_override(ctx.chat_key) or self.presets.scope(ctx)

    def conversation_key(self, ctx: ChatContext) -> str:
        return ctx.conversation_key(self.scope_for(ctx))

    def persona(self, ctx: ChatContext) -> Persona:
        """The chat's system prompt and where it comes from (/persona, a preset, the default)."""
        return self.presets.persona(ctx, self.prefs.system_prompt_override(ctx.chat_key))

    def system_prompt(self, ctx: ChatContext) -> str:
        return self.persona(ctx).text

    async def set_scope(self, ctx: ChatContext, scope: Scope) -> None:
        """Change the chat's scope; a change of the scope in effect (a preset's included) is
        written to the audit trail with who made it."""
        old = self.scope_for(ctx)
        await self.prefs.set_scope(ctx.chat_key, scope)
        if scope is not old:
            await self._audit.record_change(
                ctx.chat_key,
                ctx.user_id,
                ctx.user_name,
                AuditAction.SCOPE,
                scope_change(old, scope),
            )

    async def set_system_prompt(self, ctx: ChatContext, prompt: str | None) -> None:
        """Set the chat's system prompt (None or empty: back to the default), audited."""
        await self.prefs.set_system_prompt(ctx.chat_key, prompt)
        await self._audit.record_change(
            ctx.chat_key, ctx.user_id, ctx.user_name, AuditAction.PERSONA, persona_change(prompt)
        )
