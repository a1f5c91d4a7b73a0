"""Edited messages and channel posts: which update types the bot takes, and what an edit does.

The bot subscribes to ``message`` and ``edited_message`` (:data:`ALLOWED_UPDATES`, for
``getUpdates`` and ``setWebhook`` alike). An edit is never answered as a new message: it
replaces the original while that still waits, else it is context (:mod:`bot.conversation.edits`
has the rules). Where the original waits depends on the mode:

* **polling** -- in this process, queued for its conversation's lock: ``ChatService.edited``
  finds it there;
* **webhook** -- in the inbox, unclaimed behind the chat's earlier updates: the edit is folded
  into it as it is accepted (:func:`store_update`, ``Inbox.inbox_amend``), so the original's
  inbox row runs once, as the edited message, and the edit itself is stored done.

An edit runs through the same trigger rules as a message: commands are not run again, another
bot's edits and edits in chats that keep no context (``keep_context: false``) only replace a
waiting original. Channel posts (``channel_post``, ``edited_channel_post``, a ``message`` in a
chat of type ``channel``) are not subscribed to; one that arrives anyway (a webhook another tool
set for every update type) is acknowledged and dropped on purpose, logged at DEBUG with its
update id only: never an error, never a turn.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from aiogram.types import Message, Update, User

from adapters.telegram.barrier import ChatBarriers
from adapters.telegram.lanes import update_lane
from adapters.telegram.normalise import normalise
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.triggers import Action, decide
from bot.storage.coordination import Inbox

if TYPE_CHECKING:
    from bot.platform.seam import Platform

__all__ = [
    "ALLOWED_UPDATES",
    "CHANNEL_UPDATES",
    "EditRouting",
    "drop_channel_post",
    "is_channel",
    "store_update",
]

log = logging.getLogger(__name__)

ALLOWED_UPDATES = ["message", "edited_message"]
CHANNEL_UPDATES = ("channel_post", "edited_channel_post")


def is_channel(message: Message) -> bool:
    return message.chat.type == "channel"


async def drop_channel_post(message: Message, event_update: Update) -> None:
    """A channel post reached the bot although it never subscribed: dropped on purpose."""
    log.debug("telegram update %s: a channel post, dropped", event_update.update_id)


def message_subject(message_id: object) -> str | None:
    """What an inbox item of a message is about (``inbox_put``'s ``subject``)."""
    if isinstance(message_id, int) and not isinstance(message_id, bool):
        return f"message:{message_id}"
    return None


def _body(raw: Mapping[str, object], field: str) -> Mapping[str, object] | None:
    body = raw.get(field)
    return body if isinstance(body, Mapping) else None


def _from_channel(raw: Mapping[str, object]) -> bool:
    if any(field in raw for field in CHANNEL_UPDATES):
        return True
    body = _body(raw, "message") or _body(raw, "edited_message")
    chat = body.get("chat") if body is not None else None
    return isinstance(chat, Mapping) and chat.get("type") == "channel"


async def store_update(
    inbox: Inbox, source: str, update_id: int, raw: Mapping[str, object], text: str
) -> bool:
    """Make a posted update durable (webhook mode); False for a redelivery.

    A channel post is acknowledged without being stored. An edit whose original still waits
    unclaimed in the inbox replaces that one's payload (the original's row keeps its place in
    its lane; its payload's ``update_id`` is then the edit's) and is stored as done.
    """
    if _from_channel(raw):
        log.debug("telegram update %s: a channel post, dropped", update_id)
        return True
    lane = update_lane(raw)
    edited = _body(raw, "edited_message")
    if edited is not None and (subject := message_subject(edited.get("message_id"))) is not None:
        # ASCII escapes: a lone surrogate ("\ud800" in the post) stays text the database
        # can encode, instead of failing the insert (a 500) on both backends.
        amended = json.dumps({"update_id": update_id, "message": edited})
        if await inbox.inbox_amend(source, update_id, lane, subject, text, amended):
            log.debug("telegram update %s: an edit, folded into its waiting original", update_id)
            return True
        return await inbox.inbox_put(source, update_id, lane, text)
    message = _body(raw, "message")
    subject = message_subject(message.get("message_id")) if message is not None else None
    return await inbox.inbox_put(source, update_id, lane, text, subject=subject)


class RoutingAdapter(Protocol):
    """What edit routing reads of the adapter (its own module: no import cycle)."""

    platform: Platform
    name: str  # the platform its chats are keyed under (telegram, telegram.NAME)
    config: TelegramSettings
    me: User | None
    barriers: ChatBarriers


class EditRouting:
    """Runs an edited message through the trigger rules into ``ChatService.edited``."""

    def __init__(self, adapter: RoutingAdapter) -> None:
        self.adapter = adapter

    async def handle(self, message: Message, update_id: int) -> None:
        adapter = self.adapter
        if is_channel(message):
            log.debug("telegram update %s: a channel post, dropped", update_id)
            return
        await adapter.barriers.wait(message.chat.id)  # a migration or admin command first
        assert adapter.me is not None, "handlers run after getMe"
        incoming = normalise(message, adapter.me, adapter.name)
        trigger = adapter.config.trigger_for(message.chat.id)
        names = {info.name for info in adapter.platform.commands.infos}
        decision = decide(incoming, trigger, names)
        ignored = decision.action is Action.IGNORE
        if decision.action is Action.COMMAND or (
            ignored and (incoming.command is not None or incoming.for_other_bot)
        ):
            log.debug("telegram update %s: an edited command, not run again", update_id)
            return
        text = incoming.text if ignored else decision.text
        context = not ignored and (incoming.ctx.is_private or trigger.keep_context)
        outcome = await adapter.platform.conversation.edited(incoming.ctx, text, context=context)
        log.debug(
            "telegram update %s: edit of chat=%s message=%s: %s",
            update_id,
            message.chat.id,
            message.message_id,
            outcome,
        )
