"""Which lane a Telegram update runs in: its chat, so one chat's updates run one at a time.

The inbox (:mod:`bot.scheduling.inbox`) runs a lane's updates in ``update_id`` order on one replica
at a time; different lanes run in parallel. A chat is the unit because everything that must stay in
order happens per chat: a conversation (per chat, per user or per topic, all inside one chat), an
admin command before the next message, a group's migration before the supergroup's first message.
The service message that says a group *became* a supergroup runs in the supergroup's lane, with the
one that says the supergroup came *from* it, so the two never race. Updates without a chat (inline
queries, polls) share one lane.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NO_CHAT_LANE", "update_lane"]

NO_CHAT_LANE = "no-chat"

# Update fields whose object carries ``chat``; callback queries carry it in ``message``.
_CHAT_FIELDS = (
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "business_message",
    "edited_business_message",
    "message_reaction",
    "message_reaction_count",
    "my_chat_member",
    "chat_member",
    "chat_join_request",
    "chat_boost",
    "removed_chat_boost",
)


def update_lane(update: Mapping[str, object]) -> str:
    """The lane of a raw update (the JSON Telegram posted): a chat id, or :data:`NO_CHAT_LANE`."""
    for field in _CHAT_FIELDS:
        body = update.get(field)
        if isinstance(body, Mapping):
            migrated_to = body.get("migrate_to_chat_id")
            if isinstance(migrated_to, int):
                return str(migrated_to)
            chat = _chat_id(body)
            if chat is not None:
                return chat
    query = update.get("callback_query")
    if isinstance(query, Mapping):
        message = query.get("message")
        if isinstance(message, Mapping) and (chat := _chat_id(message)) is not None:
            return chat
    return NO_CHAT_LANE


def _chat_id(body: Mapping[str, object]) -> str | None:
    chat = body.get("chat")
    if isinstance(chat, Mapping):
        chat_id = chat.get("id")
        if isinstance(chat_id, int) and not isinstance(chat_id, bool):
            return str(chat_id)
    return None
