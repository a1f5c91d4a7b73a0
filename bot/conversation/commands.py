"""Platform-neutral chat commands. Adapters map their own syntax (``/reset``, slash commands,
console lines) onto :meth:`Commands.handle` and post the returned text.

Who is an admin is decided by :mod:`bot.guardrails.admins`. A command says whether the caller's
admin status matters to it (``admin_only``: only admins may run it; ``admin_aware``: admins get
more, like /usage's chat totals, or may do what members may not, like /reset of a shared
conversation), so adapters that must look the status up (Telegram asks ``getChatMember``) do it
for exactly those commands. A plugin's command (``plugin`` set) runs only where the chat's
``chats:`` preset, if it lists plugins, includes its plugin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace

from bot.context import ChatContext, Scope
from bot.conversation.presets import PersonaSource
from bot.conversation.service import ChatService
from bot.errors import UserFacingError
from bot.guardrails.budgets import utc_day
from bot.guardrails.usage import cached_share, percent
from bot.plugins.commands import CommandHandler, CommandInfo, CommandResult
from bot.prompt.assembly import is_shared
from bot.text import clean_text

log = logging.getLogger(__name__)


BUILTIN_COMMANDS: tuple[CommandInfo, ...] = (
    CommandInfo("help", "Show what I can do", admin_aware=True),  # lists admin commands
    CommandInfo(  # a shared conversation's reset is an admin action by default (chat.reset)
        "reset", "Start a fresh conversation (the old one is kept but forgotten)", admin_aware=True
    ),
    CommandInfo("clear", "Delete this chat's whole history", admin_only=True),
    CommandInfo("history", "How much I remember here, and my token budget"),
    CommandInfo("scope", "Share history per chat, per user or per thread", admin_only=True),
    CommandInfo(
        "persona", "Show or set this chat's system prompt (/persona reset)", admin_only=True
    ),
    CommandInfo(
        "usage", "Tokens used today (yours; admins: the chat's; bot admins: all)", admin_aware=True
    ),
)

Handler = CommandHandler
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")
HelpNote = Callable[[ChatContext, bool], str | None]
"""Extra lines for /help: given the context and whether the caller is an admin."""


class Commands:
    def __init__(self, service: ChatService) -> None:
        self.service = service
        self._handlers: dict[str, Handler] = {
            "help": self._help,
            "reset": self._reset,
            "clear": self._clear,
            "history": self._history,
            "scope": self._scope,
            "usage": self._usage,
            "persona": self._persona,
        }
        self._infos: list[CommandInfo] = list(BUILTIN_COMMANDS)
        # /clear, /scope and /persona decide themselves (a private chat's owner may clear it).
        self._own_rules = tuple(self._handlers[n] for n in ("clear", "scope", "persona"))
        self._help_notes: list[HelpNote] = []

    def register(self, info: CommandInfo, handler: Handler | None = None) -> None:
        """Add a command to /help and the platforms' menus.

        Without a handler the adapter answers it itself (``/ask`` starts a streamed reply).
        """
        name = info.name.lower()
        if not _COMMAND_NAME.match(name) or not info.description.strip():
            # Telegram and Discord both accept only this; one bad name would break every menu.
            raise ValueError(f"command /{name}: use 1-32 of a-z, 0-9, _ and give a description")
        if any(existing.name == name for existing in self._infos):
            raise ValueError(f"command /{name} is already registered")
        self._infos.append(replace(info, name=name))
        if handler is not None:
            self._handlers[name] = handler

    def unregister(self, name: str) -> None:
        """Take back a plugin's command (its setup failed, or it was unloaded)."""
        name = name.lower()
        if any(info.name == name for info in BUILTIN_COMMANDS):
            raise ValueError(f"/{name} is built in")
        self._infos = [info for info in self._infos if info.name != name]
        self._handlers.pop(name, None)

    def add_help_note(self, note: HelpNote) -> None:
        """Adapters add what /help should also say (e.g. what the bot can see in groups)."""
        self._help_notes.append(note)

    @property
    def infos(self) -> tuple[CommandInfo, ...]:
        """Every command, for /help and for registering platform command menus."""
        return tuple(self._infos)

    def is_admin(self, ctx: ChatContext) -> bool:
        return self.service.admins.is_admin(ctx)

    def knows(self, name: str) -> bool:
        return name.lower() in self._handlers

    def needs_admin_status(self, name: str) -> bool:
        """Whether /name behaves differently for admins: adapters resolve the flag for it."""
        name = name.lower()
        return any(info.name == name and info.needs_admin_status for info in self._infos)

    async def handle(self, ctx: ChatContext, name: str, args: str = "") -> CommandResult:
        try:
            await self.service.admit_command(ctx)  # a flood of commands costs replies, too
        except UserFacingError as exc:  # no access, or too fast
            return CommandResult(exc.chat_text, ok=False, private=True, notify=exc.notify)
        handler = self._handlers.get(name.lower())
        if handler is None:
            return CommandResult(f"Unknown command /{name}. Try /help.", ok=False, private=True)
        info = next((i for i in self._infos if i.name == name.lower()), None)
        if info and not self._offered(info, ctx):
            return CommandResult(
                f"/{info.name} is not enabled in this chat.", ok=False, private=True
            )
        # a group-only command in a private chat says so itself, whoever asks
        private_note = info is not None and info.groups_only and ctx.is_private
        own_rule = handler in self._own_rules or private_note
        if info and info.admin_only and not own_rule and not self.is_admin(ctx):
            # Platform menus only hide admin commands (and server admins can unhide them).
            return CommandResult(
                f"Only this chat's admins can use /{info.name}.", ok=False, private=True
            )
        log.info(
            "command /%s chat=%s user=%s admin=%s", name, ctx.chat_key, ctx.user_id, ctx.is_admin
        )
        return await handler(ctx, args.strip())

    async def _help(self, ctx: ChatContext, args: str) -> CommandResult:
        admin = self.is_admin(ctx) or ctx.is_private
        lines = ["Talk to me and I answer, remembering this conversation.", ""]
        for info in self._infos:
            if (info.admin_only and not admin) or not self._offered(info, ctx):
                continue
            if info.name == "reset" and not self.may_reset(ctx):
                continue  # a member of a shared group: only its admins may
            lines.append(f"/{info.name} - {info.description}")
        for note in self._help_notes:
            extra = note(ctx, self.is_admin(ctx))
            if extra:
                lines += ["", extra]
        return CommandResult("\n".join(lines), private=True)

    def _offered(self, info: CommandInfo, ctx: ChatContext) -> bool:
        """A plugin's command, in a chat whose preset leaves its plugin out, is not."""
        return info.plugin is None or self.service.presets.allows_plugin(ctx, info.plugin)

    def may_reset(self, ctx: ChatContext) -> bool:
        """Each person resets their own conversation (private chat, user scope); a shared one
        (a group in chat or thread scope) its admins, unless ``chat.reset: anyone``."""
        if self.service.settings.chat.reset == "anyone" or self.is_admin(ctx):
            return True
        return ctx.is_private or not is_shared(self.service.conversation_key(ctx))

    async def _reset(self, ctx: ChatContext, args: str) -> CommandResult:
        if not self.may_reset(ctx):
            return CommandResult(
                "Only this chat's admins can reset the shared conversation: everyone here talks"
                " in it. Ask an admin to /reset it.",
                ok=False,
                private=True,
            )
        await self.service.reset(ctx)
        return CommandResult("Started a fresh conversation. Earlier messages are no longer used.")

    async def _clear(self, ctx: ChatContext, args: str) -> CommandResult:
        if not ctx.is_private and not self.is_admin(ctx):
            return CommandResult(
                "Only this chat's admins can clear its history.", ok=False, private=True
            )
        result = await self.service.clear(ctx)
        return CommandResult(f"Deleted this chat's history ({result.turns} turns).")

    async def _history(self, ctx: ChatContext, args: str) -> CommandResult:
        info = await self.service.history_info(ctx)
        whose = "this private chat" if ctx.is_private else f"shared per {info.scope.value}"
        lost = f", {info.undelivered} not delivered" if info.undelivered else ""
        return CommandResult(
            f"Conversation: {whose}\n"
            f"Turns stored: {info.turns_stored} ({info.turns_in_context} since the last reset, "
            f"{info.unanswered} unanswered{lost})\n"
            f"Tokens in the window: {info.window_tokens} of a {info.budget}-token budget",
            private=True,
        )

    async def _usage(self, ctx: ChatContext, args: str) -> CommandResult:
        mine, chat = await self.service.usage_today(ctx)
        limits = self.service.settings.limits
        per_chat, per_user = self.service.presets.budgets(ctx)  # a preset's, else limits'
        per_chat = per_chat or limits.daily_tokens_per_chat
        per_user = per_user or limits.daily_tokens_per_user
        lines = [f"You used {mine:,} tokens today (UTC)" + _of(per_user)]
        # the part of the input a provider's prompt cache served (billed at a discount)
        own = await self.service.store.user_usage_on(utc_day(), ctx.platform, ctx.user_id)
        share = cached_share(own)
        if share is not None:
            lines.append(
                f"Your input: {own.prompt_tokens:,} tokens, of them cached: {percent(share)}"
            )
        if self.is_admin(ctx) and not ctx.is_private:
            lines.append(f"This chat used {chat:,}" + _of(per_chat))
        if self.service.admins.is_bot_admin(ctx):  # bot admins see the whole bill
            total = await self.service.usage_total_today(fresh=True)
            lines.append(f"The whole bot used {total:,}" + _of(limits.daily_tokens_total))
        return CommandResult("\n".join(lines) + ".", private=True)

    async def _scope(self, ctx: ChatContext, args: str) -> CommandResult:
        current = self.service.scope_for(ctx)
        if not args:
            return CommandResult(
                f"History is shared per {current.value}. Admins: /scope chat|user|thread",
                private=True,
            )
        if ctx.is_private:
            return CommandResult("Private chats always keep one history per user.", ok=False)
        if not self.is_admin(ctx):
            return CommandResult("Only this chat's admins can change the scope.", ok=False)
        try:
            scope = Scope(args.split()[0].lower())
        except ValueError:
            return CommandResult("Usage: /scope chat|user|thread", ok=False, private=True)
        await self.service.set_scope(ctx, scope)
        return CommandResult(f"History is now shared per {scope.value}.")

    async def _persona(self, ctx: ChatContext, args: str) -> CommandResult:
        if not ctx.is_private and not self.is_admin(ctx):  # the operator's prompt stays theirs
            return CommandResult(
                "Only this chat's admins can see or change its persona.", ok=False, private=True
            )
        current = self.service.persona(ctx)
        if not args:
            return CommandResult(_shown(current.text, current.source, ctx.is_private), private=True)
        if args.lower() == "reset":
            if current.source is not PersonaSource.CHAT:
                return CommandResult("This chat has no persona of its own to reset.", private=True)
            await self.service.set_system_prompt(ctx, None)
            after = self.service.persona(ctx)
            return CommandResult(f"Persona reset: this chat uses {_whose(after.source)} again.")
        text = clean_text(args).strip()
        if not text:
            return CommandResult("Usage: /persona <text> | /persona reset", ok=False, private=True)
        cap = self.service.settings.chat.max_persona_chars
        if len(text) > cap:
            return CommandResult(
                f"That persona is {len(text):,} characters; the limit is {cap:,}"
                " (it goes into every prompt). Nothing was changed.",
                ok=False,
                private=True,
            )
        await self.service.set_system_prompt(ctx, text)
        return CommandResult("Persona set: I use it for this chat from the next message on.")


def _whose(source: PersonaSource) -> str:
    if source is PersonaSource.PRESET:
        return "the persona configured for it"
    return "the default persona"


def _shown(text: str, source: PersonaSource, private: bool) -> str:
    where = {
        PersonaSource.CHAT: "This chat's own persona (set with /persona)",
        PersonaSource.PRESET: "This chat uses the persona configured for it",
        PersonaSource.DEFAULT: "This chat uses the default persona",
    }[source]
    body = text if text.strip() else "(empty)"
    who = "You" if private else "Admins"
    return f"{where}:\n\n{body}\n\n{who}: /persona <text> sets it, /persona reset undoes it."


def _of(limit: int | None) -> str:
    return f" of a {limit:,}-token daily budget" if limit is not None else ""
