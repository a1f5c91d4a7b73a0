"""One chat as the fake Telegram keeps it, and how a message is born there: ids, forum
topics, thread and reply fields, and which messages privacy mode lets the bot see."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

from bot.testing.telegram.payloads import quoted
from bot.testing.telegram.wire import JSONDict

__all__ = [
    "ChatAction",
    "ChatState",
    "bot_sees",
    "channel_post",
    "edited_message",
    "new_message",
    "topic_message",
]

TOPIC_ICON_COLOR = 7_322_096


@dataclass(slots=True)
class ChatAction:
    """One ``sendChatAction`` the bot made; ``at`` is ``time.monotonic()``."""

    chat_id: int
    action: str
    message_thread_id: int | None = None
    at: float = field(default_factory=time.monotonic)


@dataclass(slots=True)
class ChatState:
    """One chat as the server knows it. Message ids count up per chat, shared by all senders."""

    chat: JSONDict
    next_id: int = 1
    messages: dict[int, JSONDict] = field(default_factory=dict)
    members: dict[int, str] = field(default_factory=dict)
    topics: dict[int, JSONDict] = field(default_factory=dict)  # thread id -> creation message
    migrated_to: int | None = None
    forbidden: str | None = None  # the 403 description while the bot is blocked or kicked

    @property
    def id(self) -> int:
        return int(self.chat["id"])

    @property
    def type(self) -> str:
        return str(self.chat["type"])


def topic_message(state: ChatState, thread_id: int, name: str, by: JSONDict) -> JSONDict:
    """Store the service message that opens forum topic ``thread_id`` (its id is the thread's)."""
    state.next_id = max(state.next_id, thread_id + 1)
    message: JSONDict = {
        "message_id": thread_id,
        "message_thread_id": thread_id,
        "from": by,
        "chat": dict(state.chat),
        "date": int(time.time()),
        "is_topic_message": True,
        "forum_topic_created": {"name": name, "icon_color": TOPIC_ICON_COLOR},
    }
    state.messages[thread_id] = state.topics[thread_id] = message
    return message


def new_message(
    state: ChatState,
    sender: JSONDict,
    *,
    thread_id: int | None = None,
    reply_to: JSONDict | None = None,
    as_chat: bool = False,
) -> JSONDict:
    """Allocate and store a message skeleton with Telegram's thread and reply fields."""
    target = None
    if reply_to is not None:
        target = state.messages.get(int(reply_to["message_id"]), reply_to)
    if thread_id is None and target is not None and state.type == "supergroup":
        if state.chat.get("is_forum"):
            thread_id = target.get("message_thread_id") if target.get("is_topic_message") else None
        else:
            thread_id = target.get("message_thread_id", target["message_id"])
    if thread_id is not None and state.chat.get("is_forum") and thread_id not in state.topics:
        if thread_id in state.messages:
            raise ValueError(f"message {thread_id} in chat {state.id} is not a forum topic")
        topic_message(state, thread_id, f"Topic {thread_id}", sender)
    message: JSONDict = {"message_id": state.next_id}
    state.next_id += 1
    if thread_id is not None:
        message["message_thread_id"] = thread_id
    message["from"] = sender
    if as_chat:
        message["sender_chat"] = dict(state.chat)
    message["chat"] = dict(state.chat)
    message["date"] = int(time.time())
    if thread_id is not None and state.chat.get("is_forum"):
        message["is_topic_message"] = True
        target = target or state.topics[thread_id]
    if target is not None:
        message["reply_to_message"] = quoted(target)
    state.messages[message["message_id"]] = message
    return message


def edited_message(current: JSONDict, field: str, text: str, found: list[JSONDict]) -> JSONDict:
    """``current`` with its text or caption replaced: same id and date, plus ``edit_date``."""
    edited = copy.deepcopy(current)
    entities_key = "caption_entities" if field == "caption" else "entities"
    edited[field] = text
    edited.pop(entities_key, None)
    if found:
        edited[entities_key] = found
    edited["edit_date"] = max(int(time.time()), int(current["date"]))
    return edited


def channel_post(state: ChatState, text: str, found: list[JSONDict]) -> JSONDict:
    """A post in channel ``state``: sent as the channel itself, without ``from``."""
    message: JSONDict = {
        "message_id": state.next_id,
        "sender_chat": dict(state.chat),
        "chat": dict(state.chat),
        "date": int(time.time()),
        "text": text,
    }
    state.next_id += 1
    if found:
        message["entities"] = found
    state.messages[message["message_id"]] = message
    return message


def bot_sees(
    state: ChatState,
    message: JSONDict,
    text: str,
    found: list[JSONDict],
    *,
    bot_id: int,
    bot_username: str,
    privacy_mode: bool,
) -> bool:
    """Privacy mode, as Telegram applies it: in groups where the bot is not an admin, only
    commands (not another bot's), @mentions of the bot and replies to its messages arrive."""
    if not privacy_mode or state.type == "private":
        return True
    if state.members.get(bot_id) in ("creator", "administrator"):
        return True
    reply = message.get("reply_to_message") or {}
    if (reply.get("from") or {}).get("id") == bot_id and not reply.get("forum_topic_created"):
        return True
    me = f"@{bot_username}".lower()
    for entity in found:
        span = _utf16_span(text, int(entity["offset"]), int(entity["length"])).lower()
        if entity["type"] == "mention" and span == me:
            return True
        if entity["type"] == "bot_command" and entity["offset"] == 0:
            target = span.partition("@")[2]
            if not target or f"@{target}" == me:
                return True
    return False


def _utf16_span(text: str, offset: int, length: int) -> str:
    encoded = text.encode("utf-16-le", "surrogatepass")  # a lone surrogate is one unit
    return encoded[offset * 2 : (offset + length) * 2].decode("utf-16-le", errors="replace")
