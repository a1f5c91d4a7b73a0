"""Commands and admin rights in Telegram groups: the platform fact (``getChatMember``, cached
in :class:`~adapters.telegram.admins.AdminCache`) is looked up only where the policy needs it
(``bot.guardrails.admins``), behind the chat's barrier so later messages keep their order."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from aiogram import Bot
from aiogram.exceptions import AiogramError
from aiogram.types import Message

from adapters.telegram.admins import AdminCache
from adapters.telegram.barrier import ChatBarriers
from adapters.telegram.normalise import Incoming
from adapters.telegram.output import Outbox, Undeliverable
from adapters.telegram.reply import notify, reply_target
from adapters.telegram.streaming import typing_indicator
from adapters.telegram.triggers import Decision
from bot.context import ChatContext
from bot.conversation.catchup import CATCHUP_COMMAND
from bot.platform.seam import Platform

log = logging.getLogger(__name__)

_TYPING_AFTER = 0.3  # seconds: a catch-up that takes longer shows "typing"


class TelegramCommands:
    def __init__(
        self, platform: Platform, bot: Bot, admins: AdminCache, barriers: ChatBarriers
    ) -> None:
        self.platform = platform
        self.bot = bot
        self.admins = admins
        self.barriers = barriers

    async def with_admin_rights(self, message: Message, ctx: ChatContext) -> ChatContext:
        """A group admin's turn is offered the admin-only tools: ``getChatMember`` (cached)
        decides, and this chat's later messages wait for the answer, as for admin commands."""
        sender = message.from_user
        if ctx.is_private or ctx.is_admin or sender is None or message.sender_chat is not None:
            return ctx
        async with self.barriers.hold(message.chat.id):
            admin = await self.admins.is_admin(message.chat.id, sender.id)
        return replace(ctx, is_admin=admin) if admin else ctx

    async def run(self, message: Message, incoming: Incoming, decision: Decision) -> None:
        ctx = incoming.ctx
        name = decision.command or "help"
        sender = message.from_user
        if (
            self.platform.commands.needs_admin_status(
                name
            )  # admin_only or admin_aware: bot.guardrails.admins
            and not ctx.is_private
            and not ctx.is_admin
            and sender is not None
            and message.sender_chat is None
        ):
            # The member lookup is an await before the command reaches the service: later
            # messages of this chat wait, so "/clear" then "@bot ..." stays in that order.
            async with self.barriers.hold(message.chat.id):
                admin = await self.admins.is_admin(message.chat.id, sender.id)
                result = await self.platform.commands.handle(
                    replace(ctx, is_admin=admin), name, decision.text
                )
        elif name == CATCHUP_COMMAND.name:
            await self._catchup(message, ctx, decision.text)
            return
        else:
            result = await self.platform.commands.handle(ctx, name, decision.text)
        if result.notify:
            await notify(Outbox(self.bot, reply_target(message)), result.text)

    async def _catchup(self, message: Message, ctx: ChatContext, args: str) -> None:
        """``/catchup``: typing while the model writes, then the digest as a reply to the
        asker's message (the one person it pings), formatted like an answer."""
        outbox = Outbox(self.bot, reply_target(message))
        typing = typing_indicator(self.bot, message.chat.id, outbox.target.thread_id)
        # Typing once it is clearly working: a refusal (a flood's, a bad span's) comes back
        # within this and costs no sendChatAction.
        soon = asyncio.get_running_loop().call_later(_TYPING_AFTER, typing.start)
        try:
            result = await self.platform.commands.handle(ctx, CATCHUP_COMMAND.name, args)
        finally:
            soon.cancel()
            await typing.stop()
        if not result.ok:
            if result.notify:  # else told already (a flood's repeats)
                await notify(outbox, result.text)
            return
        try:
            await outbox.send_markdown(result.text)
        except (Undeliverable, AiogramError) as exc:
            log.warning("telegram: catch-up not delivered chat=%s: %s", message.chat.id, exc)
