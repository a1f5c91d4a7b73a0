"""One answer in Telegram, from the user's text to the reply on screen.

A typing indicator runs while the model works; the reply streams into an edited preview
(``stream: true``) or is sent once complete, split and formatted by :class:`Outbox`. Each
reply is tracked in ``deliveries`` while it is written (:class:`ReplyRecord`), so a crash is
repaired at the next start; a reply Telegram refuses past the retry layer is recorded
undelivered, and the user is told when something went wrong on our side.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiogram import Bot
from aiogram.exceptions import AiogramError
from aiogram.types import Message, User

from adapters.telegram.flood import FloodRetry
from adapters.telegram.held import RUNNING, InboxFollowers
from adapters.telegram.normalise import Incoming
from adapters.telegram.output import Outbox, Target, Undeliverable, render_chunks
from adapters.telegram.recovery import ReplyRecord
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.streaming import StreamingReply, typing_indicator
from bot.context import ChatContext
from bot.conversation.preview import EditThrottle
from bot.conversation.service import Done
from bot.errors import UserFacingError
from bot.llm.client import TextDelta
from bot.platform.delivery_log import DeliveryLog
from bot.platform.media import Attachments
from bot.platform.seam import Answered, Platform
from bot.platform.siblings import Siblings

log = logging.getLogger(__name__)

_FAILED = "Sorry, something went wrong while answering. The bot's admins can find it in the log."
_OFF_LOOP_CHARS = 2_000  # rendering costs ~5 ms per 1,000 characters: long ones off the loop


class TelegramReplies:
    def __init__(
        self,
        platform: Platform,
        bot: Bot,
        config: TelegramSettings,
        retry: FloodRetry,
        throttle: EditThrottle,
        deliveries: DeliveryLog,
        *,
        siblings: tuple[str, ...] = (),
    ) -> None:
        self.platform = platform
        # the deployment's other bots, told this one's group answers (telegram.bots)
        self.siblings = Siblings(platform.conversation, siblings) if siblings else None
        self.me: User | None = None  # set once getMe answered: the speaker siblings see
        self.bot = bot
        self.config = config
        self.retry = retry
        self.throttle = throttle
        self.deliveries = deliveries

    async def answer(
        self, message: Message, incoming: Incoming, text: str, attachments: Attachments = ()
    ) -> None:
        """``attachments``: the message's photo or voice note, fetched once it is admitted
        (``adapters.telegram.media``)."""
        # From here to the conversation's lock nothing suspends: arrival order holds.
        outbox = Outbox(self.bot, reply_target(message))
        if not text.strip() and incoming.command == "ask" and not attachments:
            await notify(outbox, "Ask me something: /ask <your question>")
            return
        record = ReplyRecord(
            self.deliveries,
            incoming.ctx.chat_key,
            outbox.target,
            message.message_id,
            incoming.ctx.platform,
        )
        # started once admitted: a refused message (a flood, no access) costs no typing call
        indicator = typing_indicator(self.bot, message.chat.id, outbox.target.thread_id)
        streaming = StreamingReply(
            outbox,
            self.throttle,
            private=incoming.ctx.is_private,
            typing=indicator,
            on_show=record.shown,
            max_messages=self.platform.settings.limits.max_reply_messages,
        )
        settled = False  # the record can go: delivered, told, or nothing left to repair
        held = self._held(incoming.ctx)  # webhook mode: a burst's next messages, in the inbox
        try:
            if self.config.stream:
                reply = await self._stream(incoming.ctx, text, attachments, streaming, held)
                await record.answered(reply.turn_id)
                with self.retry.window():
                    await streaming.finish(reply.shown, reply.rendered)
                await self._tell_siblings(incoming.ctx, reply.text)
            else:
                reply = await self.platform.conversation.chat(
                    incoming.ctx,
                    text,
                    attachments=attachments,
                    split=reply_messages,
                    on_admitted=indicator.start,
                    more=held,
                )
                await record.answered(reply.turn_id)
                await indicator.stop()
                with self.retry.window():
                    await outbox.finish(reply.shown, reply.rendered)
                await self._tell_siblings(incoming.ctx, reply.text)
            settled = True
        except UserFacingError as exc:
            settled = True
            record.drop()  # refused at once (rate, access)? then nothing is written
            await streaming.abandon("interrupted")
            if exc.notify:  # else the user was told already (the repeats of a flood)
                await notify(outbox, exc.chat_text)
        except Undeliverable as exc:
            settled = True  # the chat is gone for us: nothing to repair there
            log.warning("telegram: cannot post in chat=%s: %s", message.chat.id, exc)
            self.platform.outbound.failed("telegram", exc)
            await record.undelivered(exc)
        except AiogramError as exc:
            # A preview left on screen unmarked is repaired at the next start.
            settled = streaming.marked or not streaming.live.messages
            log.warning("telegram: reply not delivered chat=%s: %s", message.chat.id, exc)
            self.platform.outbound.failed("telegram", exc)
            await record.undelivered(exc)
        except Exception as exc:
            settled = True
            log.exception("telegram: answering failed chat=%s", message.chat.id)
            await streaming.abandon("interrupted")
            await notify(outbox, _FAILED)
            await record.undelivered(exc)
        finally:
            await indicator.stop()
            if held is not None:  # the ones its turn took are finished before this one is
                await held.finished()
            if settled:
                await record.done()

    def _held(self, ctx: ChatContext) -> InboxFollowers | None:
        """Webhook mode runs a chat's updates one at a time from the inbox: the later messages
        of a burst wait there, offered to this turn (:mod:`adapters.telegram.held`)."""
        item = RUNNING.get()
        if item is None or self.me is None:
            return None
        return InboxFollowers(self.platform.store, self.bot, self.me, ctx.platform, item, ctx)

    async def _tell_siblings(self, ctx: ChatContext, text: str) -> None:
        """The deployment's other bots in this group keep the answer as context."""
        me = self.me
        if self.siblings is not None and me is not None:
            speaker = me.full_name or me.username or str(me.id)
            await self.siblings.tell(ctx, str(me.id), speaker, text)

    async def _stream(
        self,
        ctx: ChatContext,
        text: str,
        attachments: Attachments,
        streaming: StreamingReply,
        held: InboxFollowers | None,
    ) -> Answered:
        async with contextlib.aclosing(
            self.platform.conversation.stream(
                ctx,
                text,
                attachments=attachments,
                split=reply_messages,
                on_admitted=streaming.typing.start,
                more=held,
            )
        ) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    await streaming.feed(event.text)
                elif isinstance(event, Done):
                    return event.reply
        raise AssertionError("a stream always ends with Done")  # pragma: no cover


async def notify(outbox: Outbox, text: str) -> None:
    """A plain notice (a refusal, a command's answer); a failure to send it is only logged."""
    try:
        await outbox.send_plain(text)
    except (Undeliverable, AiogramError) as exc:
        log.warning("telegram: notice not delivered chat=%s: %s", outbox.target.chat_id, exc)


def reply_target(message: Message) -> Target:
    """Where the answer to ``message`` goes: its chat and topic, quoting it outside DMs."""
    private = message.chat.type == "private"
    return Target(
        chat_id=message.chat.id,
        thread_id=message.message_thread_id if message.is_topic_message else None,
        reply_to=None if private else message.message_id,
    )


async def reply_messages(markdown: str) -> list[str]:
    """The messages a reply takes once formatted, so the core keeps it within
    ``limits.max_reply_messages``; the last ones come back as the reply's ``rendered``, which
    ``Outbox.finish`` sends as they are."""
    if len(markdown) > _OFF_LOOP_CHARS:
        return await asyncio.to_thread(render_chunks, markdown)
    return render_chunks(markdown)
