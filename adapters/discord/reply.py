"""One answer in Discord, from the user's text to the reply's messages.

Used for a message that triggers the bot and for ``/ask``. A typing indicator (given by the
caller, started once the message is admitted) runs while the model works; with ``stream: true``
the answer grows in a live preview, edited at ``discord.edit_interval`` and rolled over into a
new message before Discord's 2000 characters, else it is sent once complete. Either way the
final text is split by ``deliver`` (``output.py``), and the core keeps it within
``limits.max_reply_messages`` of those messages. A failed preview edit pauses the preview, never
the answer. In a server, the deployment's other Discord bots are then told the answer
(:mod:`bot.platform.siblings`). A failure on our side, or a refusal the user should hear of
(always, for an interaction: it waits for an answer), becomes a short notice after whatever is
shown; a reply Discord refuses is logged.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import aiohttp
import discord

from adapters.discord.normalise import PLATFORM
from adapters.discord.output import LIMIT, InteractionReply, ReplyMessages, deliver
from adapters.discord.settings import DiscordSettings
from adapters.discord.split import split_message
from bot.context import ChatContext
from bot.conversation.preview import EditThrottle, LivePreview, Repeating
from bot.conversation.service import Done
from bot.errors import UserFacingError
from bot.llm.client import TextDelta
from bot.platform.media import Attachments
from bot.platform.seam import Answered, Platform
from bot.platform.siblings import Siblings
from bot.text import clean_text

__all__ = ["FAILED", "ROLLOVER", "DiscordReplies"]

log = logging.getLogger(__name__)

ROLLOVER = 1900  # leave room for the cursor and fence repairs before Discord's 2000
FAILED = "Sorry, something went wrong while answering. The bot's admins can find it in the log."
_PREVIEW_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)


class DiscordReplies:
    def __init__(
        self,
        platform: Platform,
        config: DiscordSettings,
        throttle: EditThrottle,
        *,
        name: str = PLATFORM,
        siblings: tuple[str, ...] = (),
    ) -> None:
        """``name``: the platform this bot's chats are keyed under; ``siblings``: the other
        bots of the deployment, told this one's answers in servers (``discord.bots``)."""
        self.platform = platform
        self.config = config
        self.throttle = throttle
        self.name = name
        self.siblings = Siblings(platform.conversation, siblings) if siblings else None
        self.me: discord.abc.User | None = None  # set once logged in: who siblings hear

    async def answer(
        self,
        ctx: ChatContext,
        text: str,
        messages: ReplyMessages,
        indicator: Repeating | None,
        channel_id: int,
        attachments: Attachments = (),
    ) -> None:
        """Stream the model's answer into ``messages``; errors become a short notice."""
        live = LivePreview(
            _Shown(messages),
            self.throttle,
            channel_id,
            private=ctx.is_private,
            rollover=ROLLOVER,
            max_messages=self.platform.settings.limits.max_reply_messages,
        )
        # A slash command asks for an answer of its own: it neither gathers a burst nor joins one.
        burst = not isinstance(messages, InteractionReply)
        try:
            admitted = indicator.start if indicator is not None else None
            reply: Answered | None = None
            if self.config.stream:
                reply = await self._stream(ctx, text, attachments, live, admitted, burst)
            if reply is None:
                reply = await self.platform.conversation.chat(
                    ctx, text, attachments=attachments, split=_messages, on_admitted=admitted,
                    burst=burst,
                )  # fmt: skip
            if indicator is not None:
                await indicator.stop()
            await deliver(messages, reply.shown, reply.rendered)
            await self._tell_siblings(ctx, reply.text)
        except UserFacingError as exc:
            if exc.notify or isinstance(messages, InteractionReply):  # an interaction needs one
                await self._notice(messages, live, exc.chat_text)
        except discord.HTTPException as exc:
            log.warning("%s: reply not delivered channel=%s: %s", self.name, channel_id, exc)
            self.platform.outbound.failed(self.name, exc)
        except Exception:
            log.exception("%s: answering failed channel=%s", self.name, channel_id)
            await self._notice(messages, live, FAILED)
        finally:
            if indicator is not None:
                await indicator.stop()

    async def _tell_siblings(self, ctx: ChatContext, text: str) -> None:
        """The deployment's other bots in this channel keep the answer as context."""
        me = self.me
        if self.siblings is not None and me is not None:
            await self.siblings.tell(ctx, str(me.id), clean_text(me.display_name), text)

    async def _stream(
        self,
        ctx: ChatContext,
        text: str,
        attachments: Attachments,
        live: LivePreview,
        on_admitted: Callable[[], object] | None,
        burst: bool,
    ) -> Answered:
        events = self.platform.conversation.stream(
            ctx, text, attachments=attachments, split=_messages, on_admitted=on_admitted,
            burst=burst,
        )  # fmt: skip
        async with contextlib.aclosing(events) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    try:
                        await live.feed(event.text)
                    except _PREVIEW_ERRORS as exc:  # the preview is a nicety
                        log.warning("discord: streaming edits paused: %s", exc)
                        live.paused = True
                elif isinstance(event, Done):
                    return event.reply
        raise AssertionError("a stream always ends with Done")  # pragma: no cover

    async def _notice(self, messages: ReplyMessages, live: LivePreview, text: str) -> None:
        try:
            cut = live.cut_off("interrupted")
            if cut is not None:
                await messages.put(live.index, cut)
            await messages.put(messages.count, text)  # after whatever is shown, never over it
        except _PREVIEW_ERRORS as exc:
            log.warning("discord: notice not delivered: %s", exc)


class _Shown:
    """The live preview writes into the reply's messages."""

    def __init__(self, messages: ReplyMessages) -> None:
        self.messages = messages

    async def show(self, index: int, text: str) -> None:
        await self.messages.put(index, text)


async def _messages(text: str) -> list[str]:
    """The messages ``deliver`` would send, so the core keeps a reply within
    ``limits.max_reply_messages``; the last ones come back as the reply's ``rendered``, which
    ``deliver`` sends as they are."""
    return split_message(text, LIMIT) or ["…"]
