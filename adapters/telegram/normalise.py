"""Turn an aiogram ``Message`` into the platform-neutral ``ChatContext`` plus the facts that
decide whether the bot is addressed. Pure: no requests, so it is tested with plain data.

Entity offsets are in UTF-16 code units (an emoji before a mention shifts it by two), so spans
are cut with aiogram's ``MessageEntity.extract_from`` and our own UTF-16 slicing, never with
Python string indices. Text and names are cleaned of lone UTF-16 surrogates first
(:mod:`bot.text`): U+FFFD is one UTF-16 unit like the surrogate it replaces, so
offsets hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiogram.types import Chat, Message, MessageEntity, User

from bot.context import ChatContext, ChatType
from bot.text import clean_text

PLATFORM = "telegram"
GROUP_ANONYMOUS_BOT_ID = 1087968824  # posts of anonymous group admins come "from" this bot
_SPACES = re.compile(r"[ \t]{2,}")
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{5,32}\b")
_COMMAND = re.compile(r"^/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w@/<>])")

_CHAT_TYPES = {
    "private": ChatType.PRIVATE,
    "group": ChatType.GROUP,
    "supergroup": ChatType.GROUP,
    "channel": ChatType.CHANNEL,
}


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message as the trigger rules see it."""

    ctx: ChatContext
    text: str  # the text or caption with the bot's own @mentions removed
    mentioned: bool  # an @mention (or text mention) of this bot
    reply_to_bot: bool  # a reply to one of this bot's messages
    command: str | None  # lower-cased command name when the message starts with one for us
    command_args: str
    for_other_bot: bool  # /command@some_other_bot
    from_bot: bool  # sent by another bot: never answered
    quoted: str | None  # the replied-to message's text, when it is someone else's
    quoted_author: str
    to_others: bool = False  # @mentions someone else: theirs, never a follow-up of our burst


def chat_key(chat_id: int | str, platform: str = PLATFORM) -> str:
    return f"{platform}:{chat_id}"


def normalise(message: Message, me: User, platform: str = PLATFORM) -> Incoming:
    """``message`` as the core sees it; ``platform``: ``telegram``, or ``telegram.NAME`` for
    one of ``telegram.bots`` (its chats are its own)."""
    chat = message.chat
    user_id, user_name, anonymous_admin = _sender(message)
    thread = message.message_thread_id if message.is_topic_message else None
    reply = message.reply_to_message
    ctx = ChatContext(
        platform=platform,
        chat_id=str(chat.id),
        chat_type=_CHAT_TYPES.get(chat.type, ChatType.GROUP),
        user_id=user_id,
        user_name=user_name,
        thread_id=str(thread) if thread is not None else None,
        message_id=str(message.message_id),
        is_admin=anonymous_admin,  # only a chat's admins can post as the chat itself
        reply_to_message_id=str(reply.message_id) if reply and not _is_topic_root(reply) else None,
        chat_title=_title_of(chat),
    )
    raw = clean_text(message.text if message.text is not None else (message.caption or ""))
    entities = list(message.entities or message.caption_entities or []) or _detect(raw)
    mentions = [e for e in entities if _mentions(e, raw, me)]
    others = [e for e in entities if e.type in _MENTIONS and not _mentions(e, raw, me)]
    command, args, other_bot = _command(raw, entities, me)
    reply_to_bot = bool(reply and reply.from_user and reply.from_user.id == me.id)
    quoted, quoted_author = _quote(reply, me)
    sender = message.from_user
    from_bot = message.sender_chat is None and sender is not None and sender.is_bot
    return Incoming(
        ctx=ctx,
        text=_without(raw, mentions).strip(),
        mentioned=bool(mentions),
        reply_to_bot=reply_to_bot and not _is_topic_root(reply),
        command=command,
        command_args=args,
        for_other_bot=other_bot,
        from_bot=from_bot and sender is not None and sender.id != me.id,
        quoted=quoted,
        quoted_author=quoted_author,
        to_others=bool(others),
    )


def _sender(message: Message) -> tuple[str, str, bool]:
    """Who wrote it: a user, or a chat posting as itself (anonymous admin, linked channel)."""
    sender_chat = message.sender_chat
    if sender_chat is not None:
        anonymous_admin = sender_chat.id == message.chat.id
        return str(sender_chat.id), _chat_title(sender_chat, anonymous_admin), anonymous_admin
    user = message.from_user
    if user is None:  # channel posts
        return str(message.chat.id), _chat_title(message.chat, False), False
    return str(user.id), clean_text(user.full_name or (user.username or str(user.id))), False


def _title_of(chat: Chat) -> str:
    """What the admin dashboard calls the chat: its title, a private chat's person."""
    if chat.type == "private":
        return clean_text(chat.full_name or chat.username or "")
    return clean_text(chat.title or chat.username or "")


def _chat_title(chat: Chat, anonymous_admin: bool) -> str:
    title = clean_text(chat.title or chat.username or str(chat.id))
    return f"{title} (admin)" if anonymous_admin else title


_MENTIONS = frozenset({"mention", "text_mention"})


def _mentions(entity: MessageEntity, text: str, me: User) -> bool:
    if entity.type == "text_mention":
        return entity.user is not None and entity.user.id == me.id
    if entity.type == "mention" and me.username:
        return entity.extract_from(text).lower() == f"@{me.username.lower()}"
    return False


def _command(text: str, entities: list[MessageEntity], me: User) -> tuple[str | None, str, bool]:
    first = next((e for e in entities if e.type == "bot_command" and e.offset == 0), None)
    if first is None:
        return None, "", False
    name, _, target = first.extract_from(text)[1:].partition("@")
    if target and (not me.username or target.lower() != me.username.lower()):
        return None, "", True
    args = _utf16_slice(text, first.offset + first.length, None).strip()
    return name.lower(), args, False


def _quote(reply: Message | None, me: User) -> tuple[str | None, str]:
    if reply is None or _is_topic_root(reply):
        return None, ""
    if reply.from_user is not None and reply.from_user.id == me.id:
        return None, ""
    text = reply.text or reply.caption
    if not text:
        return None, ""
    _, author, _ = _sender(reply)
    return clean_text(text), author


def _is_topic_root(message: Message | None) -> bool:
    """In forum topics every message "replies" to the topic's creation service message."""
    return message is not None and message.forum_topic_created is not None


def _without(text: str, spans: list[MessageEntity]) -> str:
    """``text`` with the given entity spans cut out (UTF-16 offsets), whitespace tidied."""
    if not spans:
        return text
    encoded = text.encode("utf-16-le")
    kept = bytearray()
    position = 0
    for entity in sorted(spans, key=lambda e: e.offset):
        kept += encoded[position * 2 : entity.offset * 2]
        position = entity.offset + entity.length
    kept += encoded[position * 2 :]
    return _SPACES.sub(" ", kept.decode("utf-16-le", errors="replace"))


def _detect(text: str) -> list[MessageEntity]:
    """Mentions and a leading command, for updates that arrive without entities.

    Telegram always sends entities; hand-made updates (other servers, tests) may not.
    """
    found: list[MessageEntity] = []
    for match in _MENTION.finditer(text):
        offset = _utf16_len(text[: match.start()])
        found.append(MessageEntity(type="mention", offset=offset, length=_utf16_len(match[0])))
    command = _COMMAND.match(text)
    if command:
        found.append(MessageEntity(type="bot_command", offset=0, length=_utf16_len(command[0])))
    return found


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _utf16_slice(text: str, start: int, end: int | None) -> str:
    encoded = text.encode("utf-16-le")
    stop = None if end is None else end * 2
    return encoded[start * 2 : stop].decode("utf-16-le", errors="replace")
