"""No reply left silently cut off: each reply's delivery record, and the start-up repair.

While a reply is written, :class:`ReplyRecord` keeps its row in ``deliveries``
(:mod:`bot.storage.deliveries`) up to date: the chat, the user's message, and the preview
message with what it shows. The row goes once the reply is delivered or the user was told.

A row that outlives its process (kill -9, power loss, or Telegram refused even the
"[interrupted]" mark) is repaired by :func:`recover` when the adapter next starts, after the
store has closed the dead process's pending turns as interrupted: a preview is edited to its
partial text plus :data:`PREVIEW_MARK`; a question that got no preview at all is answered with
:data:`NOTICE`; an answer that was stored but not delivered is marked undelivered. In webhook
mode a question whose update waits in the inbox to run again, or ran again and was answered,
is answered anyway: its preview gets :data:`AGAIN_MARK` instead, and without a preview nothing
is sent. Each row is tried once (through the retry layer), the whole repair is bounded in time,
and nothing in it can fail the start.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable

from aiogram import Bot
from aiogram.exceptions import AiogramError, TelegramBadRequest
from aiogram.types import LinkPreviewOptions, Message, ReplyParameters

from adapters.telegram.edits import message_subject
from adapters.telegram.output import Target
from bot.conversation.preview import CURSOR
from bot.platform.delivery_log import DeliveryLog
from bot.storage.coordination import INBOX_MAX_ATTEMPTS, Inbox
from bot.values import Delivery

log = logging.getLogger(__name__)

RunsAgain = Callable[[Delivery], Awaitable[bool]]

PLATFORM = "telegram"
PREVIEW_MARK = "[interrupted: the bot restarted; please ask again]"
NOTICE = "[interrupted: the bot restarted before answering this; please ask again]"
AGAIN_MARK = "[interrupted: the bot restarted; the answer follows below]"
MAX_AGE = 2 * 86400.0  # older rows are dropped unrepaired: nobody waits for those any more


class ReplyRecord:
    """The delivery row of one reply. Best effort: a failing store never fails the reply."""

    def __init__(
        self,
        deliveries: DeliveryLog,
        chat_key: str,
        target: Target,
        question: int,
        platform: str = PLATFORM,
    ) -> None:
        self._deliveries = deliveries
        self.turn_id: int | None = None  # once the answer is stored
        where = (str(target.chat_id), None if target.thread_id is None else str(target.thread_id))
        self._begin = functools.partial(deliveries.begin, platform, chat_key, *where, str(question))
        self._row: asyncio.Task[int] | None = None
        self._dropped = False
        # Written in the background, from the loop's next turn: the handler reaches the
        # conversation lock without suspending (arrival order), and a message the service
        # refuses at once (rate limit, access) is dropped before anything is written.
        self._soon = asyncio.get_running_loop().call_soon(self._start)

    def _start(self) -> None:
        if self._row is None and not self._dropped:
            self._soon.cancel()
            self._row = asyncio.ensure_future(self._begin())

    def drop(self) -> None:
        """The reply never started: write nothing, if nothing was written yet."""
        if self._row is None:
            self._soon.cancel()
            self._dropped = True

    async def _id(self) -> int | None:
        self._start()
        if self._row is None:
            return None
        try:
            return await asyncio.shield(self._row)
        except Exception as exc:
            log.warning("delivery record not written: %s", exc)
            return None

    async def shown(self, message: Message, text: str) -> None:
        """The preview now is ``message``, showing ``text``."""
        row = await self._id()
        if row is not None:
            try:
                await self._deliveries.showing(row, str(message.message_id), text)
            except Exception as exc:
                log.warning("delivery record not updated: %s", exc)

    async def answered(self, turn_id: int) -> None:
        self.turn_id = turn_id
        row = await self._id()
        if row is not None:
            try:
                await self._deliveries.answered(row, turn_id)
            except Exception as exc:
                log.warning("delivery record not updated: %s", exc)

    async def undelivered(self, exc: BaseException) -> None:
        """The stored answer never reached the chat: say so in the history. (Before it was
        stored, the service fails the turn itself.)"""
        if self.turn_id is not None:
            try:
                await self._deliveries.undelivered(self.turn_id, f"{type(exc).__name__}: {exc}")
            except Exception as error:
                log.warning("turn %d not marked undelivered: %s", self.turn_id, error)

    async def done(self) -> None:
        row = await self._id()
        if row is not None:
            try:
                await asyncio.shield(self._deliveries.done(row))
            except Exception as exc:
                log.warning("delivery record not deleted: %s", exc)


async def recover(
    bot: Bot,
    deliveries: DeliveryLog,
    budget: float,
    *,
    platform: str = PLATFORM,
    runs_again: RunsAgain | None = None,
) -> int:
    """Repair what dead processes left in Telegram chats; returns how many rows were settled.

    ``runs_again(record)``: whether the question will be answered anyway (webhook mode: its
    update waits in the inbox to run again); then nobody is told to ask again: a preview gets
    :data:`AGAIN_MARK`, a question without one gets nothing. Never raises (start-up must go
    on); rows not reached within ``budget`` seconds wait for the next start.
    """
    settled = 0
    try:
        async with asyncio.timeout(budget):
            for record in await deliveries.orphans(platform):
                try:
                    again = runs_again is not None and await _will_run(runs_again, record)
                    await _repair(bot, deliveries, record, again)
                finally:
                    await asyncio.shield(deliveries.done(record.delivery_id))
                settled += 1
    except TimeoutError:
        log.warning("telegram: repair of interrupted replies stopped after %.0fs", budget)
    except Exception:
        log.exception("telegram: repair of interrupted replies failed")
    if settled:
        log.info("telegram: %d interrupted replies marked", settled)
    return settled


def inbox_reruns(inbox: Inbox, source: str) -> RunsAgain:
    """Webhook mode: a question is answered anyway when its update waits in the inbox with an
    attempt to spare, or already ran again (another replica took it over) and was answered.
    One given up after its last attempt never is."""

    async def runs_again(record: Delivery) -> bool:
        subject = message_subject(int(record.reply_to)) if record.reply_to else None
        if subject is None:
            return False
        progress = await inbox.inbox_progress(source, record.chat_id, subject)
        if progress is None:
            return False
        return progress.answered or (not progress.done and progress.attempts < INBOX_MAX_ATTEMPTS)

    return runs_again


async def _will_run(runs_again: RunsAgain, record: Delivery) -> bool:
    if record.turn_id is not None or record.reply_to is None:
        return False  # an answer stored (marked undelivered below), or no question to run
    try:
        return await runs_again(record)
    except Exception as exc:  # cannot tell: say what is always true
        log.warning("telegram: does chat=%s's update run again? unknown: %s", record.chat_id, exc)
        return False


async def _repair(bot: Bot, deliveries: DeliveryLog, record: Delivery, again: bool) -> None:
    if record.turn_id is not None:  # the answer was stored; it never (fully) arrived
        await deliveries.undelivered(record.turn_id, "interrupted")
    if time.time() - record.created_at > MAX_AGE or (again and record.message_id is None):
        return  # nobody waits for it any more; or its answer is on the way anyway
    chat_id = int(record.chat_id)
    mark = AGAIN_MARK if again else PREVIEW_MARK
    try:
        if record.message_id is not None:
            text = f"{record.shown.removesuffix(CURSOR).rstrip()} {mark}".lstrip()
            await bot.edit_message_text(
                text=text,
                chat_id=chat_id,
                message_id=int(record.message_id),
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
        else:
            reply = (
                None
                if record.reply_to is None
                else ReplyParameters(
                    message_id=int(record.reply_to), allow_sending_without_reply=True
                )
            )
            await bot.send_message(
                chat_id=chat_id,
                text=NOTICE,
                message_thread_id=None if record.thread_id is None else int(record.thread_id),
                reply_parameters=reply,
            )
    except TelegramBadRequest as exc:
        if "not modified" not in exc.message.lower():
            log.info("telegram: interrupted reply chat=%s not marked: %s", chat_id, exc)
    except AiogramError as exc:
        log.warning("telegram: interrupted reply chat=%s not marked: %s", chat_id, exc)
