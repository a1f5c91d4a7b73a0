"""The fake Telegram's world: users, chats, messages, the update queue, and the test controls.

Everything a test does "as a user" lives here (``user``, ``group``, ``send``, ``migrate`` ...),
as does what a test reads back (``sent``, ``messages``, ``edits``, ``actions``). The HTTP
server and the Bot API methods build on it, so a test can drive the world without any I/O.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
from collections import deque

from bot.testing.telegram.chats import (
    ChatAction,
    ChatState,
    bot_sees,
    channel_post,
    edited_message,
    new_message,
    topic_message,
)
from bot.testing.telegram.payloads import (
    ANONYMOUS_ADMIN,
    MEMBER_STATUSES,
    find_entities,
    normalize_entities,
    photo_sizes,
    scope_key,
    user_json,
)
from bot.testing.telegram.wire import ApiCall, ApiError, JSONDict

__all__ = ["ChatAction", "ChatState", "TelegramState"]

FIRST_UPDATE_ID = 100_000_001


class TelegramState:
    """Data and test controls of ``FakeTelegram`` (see ``bot.testing.fake_telegram``)."""

    def __init__(
        self,
        token: str = "123456:TEST-fake-token",
        bot_username: str = "parlour_bot",
        bot_name: str = "Parlour",
        privacy_mode: bool = True,
    ) -> None:
        prefix, colon, secret = token.partition(":")
        if not prefix.isdigit() or not colon or not secret:
            raise ValueError(f"a bot token looks like '<bot id>:<secret>', got {token!r}")
        self.token = token
        self.bot_id = int(prefix)
        self.bot_username = bot_username
        self.bot_name = bot_name
        self.privacy_mode = privacy_mode
        self.bot_user: JSONDict = user_json(self.bot_id, bot_name, bot_username, is_bot=True)
        self.users: dict[int, JSONDict] = {}
        self.calls: list[ApiCall] = []
        self.sent: list[JSONDict] = []
        self.deleted: list[tuple[int, int]] = []
        self.actions: list[ChatAction] = []
        self.commands: dict[str, list[JSONDict]] = {}
        self.callback_answers: list[JSONDict] = []
        self._chats: dict[int, ChatState] = {}
        self._updates: list[JSONDict] = []
        self._next_update_id = FIRST_UPDATE_ID
        self._query_ids: set[str] = set()
        self._query_counter = itertools.count(4_000_000_000_000_000_001)
        self._edits: dict[tuple[int, int], list[ApiCall]] = {}
        self._injected: dict[str, deque[ApiError]] = {}
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ the world

    def user(
        self,
        id: int,
        first_name: str,
        username: str | None = None,
        is_bot: bool = False,
        last_name: str | None = None,
    ) -> JSONDict:
        """A ``User`` object, remembered so entities and ``getChatMember`` can find it."""
        user = user_json(id, first_name, username, is_bot=is_bot, last_name=last_name)
        self.users[id] = user
        return user

    def private_chat(self, user: JSONDict) -> JSONDict:
        """The user's private chat with the bot (id = user id): the user has pressed Start."""
        self.users.setdefault(int(user["id"]), user)
        chat: JSONDict = {"id": user["id"], "first_name": user["first_name"]}
        for key in ("last_name", "username"):
            if user.get(key):
                chat[key] = user[key]
        chat["type"] = "private"
        return self._register(chat).chat

    def group(
        self,
        id: int,
        title: str,
        supergroup: bool = False,
        forum: bool = False,
        username: str | None = None,
    ) -> JSONDict:
        """A group the bot is a member of; ``forum=True`` makes a supergroup with topics."""
        chat: JSONDict = {"id": id, "title": title}
        if username:
            chat["username"] = username
        chat["type"] = "supergroup" if supergroup or forum else "group"
        if forum:
            chat["is_forum"] = True
        return self._register(chat).chat

    def set_member(self, chat_id: int, user_id: int, status: str) -> None:
        """Set a member's status: creator, administrator, member, left or kicked."""
        if status not in MEMBER_STATUSES:
            raise ValueError(f"status must be one of {sorted(MEMBER_STATUSES)}, got {status!r}")
        self._known_chat(chat_id).members[user_id] = status
        self._bump()

    def topic(self, chat: JSONDict, name: str, by: JSONDict | None = None) -> int:
        """Create a forum topic (pushing its service message); returns its thread id.

        ``by`` defaults to the chat's creator, else GroupAnonymousBot.
        """
        state = self._known_chat(int(chat["id"]))
        if not state.chat.get("is_forum"):
            raise ValueError(f"chat {state.id} is not a forum")
        thread_id = state.next_id
        owner = next((u for u, s in state.members.items() if s == "creator"), 0)
        creator = by or self.users.get(owner) or ANONYMOUS_ADMIN
        message = topic_message(state, thread_id, name, creator)
        self.push_update({"message": copy.deepcopy(message)})
        return thread_id

    def send(
        self,
        chat: JSONDict,
        user: JSONDict,
        text: str,
        *,
        reply_to: JSONDict | None = None,
        thread_id: int | None = None,
        caption: bool = False,
        anonymous_admin: bool = False,
        entities: list[JSONDict] | None = None,
        media: JSONDict | None = None,
    ) -> JSONDict:
        """A user writes ``text`` in ``chat``: pushes the update and returns its Message.

        Entities default to what Telegram detects (mentions, commands, links, hashtags).
        ``caption=True`` sends a photo with the text as its caption; ``anonymous_admin``
        posts as the group itself (``from`` is GroupAnonymousBot, ``sender_chat`` the chat).
        ``media``: fields such as ``photo`` or ``voice`` (``bot.testing.telegram.files``
        builds them); the text is then the caption, if any.
        """
        state = self._chats.get(int(chat["id"])) or self._register(dict(chat))
        if state.migrated_to is not None:
            raise ValueError(f"chat {state.id} was migrated to {state.migrated_to}")
        self.users.setdefault(int(user["id"]), user)
        if state.type != "private" and not anonymous_admin:
            state.members.setdefault(int(user["id"]), "member")
        sender = ANONYMOUS_ADMIN if anonymous_admin else user
        message = new_message(
            state, sender, thread_id=thread_id, reply_to=reply_to, as_chat=anonymous_admin
        )
        found = find_entities(text) if entities is None else normalize_entities(text, entities)
        if media is not None:
            message.update(media)
            if text:
                message["caption"] = text
            if found:
                message["caption_entities"] = found
        elif caption:
            message["photo"] = photo_sizes(f"{state.id}:{message['message_id']}")
            message["caption"] = text
            if found:
                message["caption_entities"] = found
        else:
            message["text"] = text
            if found:
                message["entities"] = found
        if bot_sees(
            state,
            message,
            text,
            found,
            bot_id=self.bot_id,
            bot_username=self.bot_username,
            privacy_mode=self.privacy_mode,
        ):
            self.push_update({"message": copy.deepcopy(message)})
        return message

    def edit(
        self, message: JSONDict, text: str, *, entities: list[JSONDict] | None = None
    ) -> JSONDict:
        """Its author edits a user's ``message`` (a text, or a caption) to ``text``: pushes
        ``edited_message`` (``edited_channel_post`` in a channel) with ``edit_date``, as
        Telegram does, and returns the edited Message.

        Delivered when the bot saw the original or sees the new version (an @mention added
        under privacy mode: the fake's reading, Telegram does not document it).
        """
        state = self._known_chat(int(message["chat"]["id"]))
        current = state.messages.get(int(message["message_id"]))
        if current is None or (current.get("from") or {}).get("id") == self.bot_id:
            raise ValueError("only a user's message the fake knows can be edited this way")
        field = "caption" if "caption" in current else "text"
        old_text = str(current.get(field, ""))
        if field not in current or old_text == text:
            raise ValueError("Telegram only sends an edit that changes a text or a caption")
        old_entities = list(
            current.get(f"{field}_entities" if field == "caption" else "entities") or []
        )
        found = find_entities(text) if entities is None else normalize_entities(text, entities)
        edited = edited_message(current, field, text, found)
        state.messages[int(edited["message_id"])] = edited
        sees = functools.partial(
            bot_sees,
            state,
            bot_id=self.bot_id,
            bot_username=self.bot_username,
            privacy_mode=self.privacy_mode,
        )
        if sees(current, old_text, old_entities) or sees(edited, text, found):
            kind = "edited_channel_post" if state.type == "channel" else "edited_message"
            self.push_update({kind: copy.deepcopy(edited)})
        return edited

    def channel(self, id: int, title: str, username: str | None = None) -> JSONDict:
        """A channel the bot administers (a bot sees a channel's posts only as an admin)."""
        chat: JSONDict = {"id": id, "title": title}
        if username:
            chat["username"] = username
        chat["type"] = "channel"
        state = self._register(chat)
        state.members[self.bot_id] = "administrator"
        return state.chat

    def post(self, channel: JSONDict, text: str) -> JSONDict:
        """The channel publishes ``text``: a ``channel_post`` (no ``from``); returns it."""
        state = self._known_chat(int(channel["id"]))
        if state.type != "channel":
            raise ValueError(f"chat {state.id} is a {state.type}, not a channel")
        message = channel_post(state, text, find_entities(text))
        self.push_update({"channel_post": copy.deepcopy(message)})
        return message

    def press(self, message: JSONDict, user: JSONDict, data: str) -> JSONDict:
        """A user presses an inline button with ``callback_data=data`` under ``message``."""
        state = self._known_chat(int(message["chat"]["id"]))
        current = state.messages.get(int(message["message_id"]), message)
        query: JSONDict = {
            "id": str(next(self._query_counter)),
            "from": user,
            "message": copy.deepcopy(current),
            "chat_instance": str(-(state.id * 7919 % 10**18)),
            "data": data,
        }
        self.push_update({"callback_query": query})
        return query

    def migrate(self, chat: JSONDict, new_id: int, by: JSONDict | None = None) -> JSONDict:
        """Upgrade a basic group to a supergroup ``new_id``, with both service messages."""
        old = self._known_chat(int(chat["id"]))
        if old.type != "group":
            raise ValueError(f"only a basic group can be migrated, chat {old.id} is {old.type}")
        new = self._register({"id": new_id, "title": old.chat["title"], "type": "supergroup"})
        new.members.update(old.members)
        creator = next((u for u, s in old.members.items() if s == "creator"), None)
        actor = by or self.users.get(creator or 0) or ANONYMOUS_ADMIN
        goodbye = new_message(old, actor)
        goodbye["migrate_to_chat_id"] = new_id
        old.migrated_to = new_id
        hello = new_message(new, ANONYMOUS_ADMIN, as_chat=True)
        hello["migrate_from_chat_id"] = old.id
        self.push_update({"message": copy.deepcopy(goodbye)})
        self.push_update({"message": copy.deepcopy(hello)})
        return new.chat

    def push_update(self, update: JSONDict) -> int:
        """Queue a raw update for ``getUpdates``/the webhook; assigns ``update_id`` if missing."""
        update = dict(update)
        update_id = int(update.setdefault("update_id", self._next_update_id))
        self._next_update_id = max(self._next_update_id, update_id + 1)
        query = update.get("callback_query")
        if isinstance(query, dict) and "id" in query:
            self._query_ids.add(str(query["id"]))
        self._updates.append(update)
        self._bump()
        return update_id

    # ------------------------------------------------------------ fault injection

    def flood(self, method: str = "sendMessage", retry_after: int = 1, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` get 429 ``Too Many Requests`` (not performed)."""
        error = ApiError(
            429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
        )
        self._injected.setdefault(method.lower(), deque()).extend([error] * times)

    def fail(
        self,
        method: str,
        status: int,
        description: str,
        times: int = 1,
        parameters: JSONDict | None = None,
    ) -> None:
        """The next ``times`` calls of ``method`` fail with this status and description."""
        error = ApiError(status, description, parameters)
        self._injected.setdefault(method.lower(), deque()).extend([error] * times)

    def heal(self, method: str | None = None) -> None:
        """Drop the injected failures still queued (of ``method``, or of every method)."""
        if method is None:
            self._injected.clear()
        else:
            self._injected.pop(method.lower(), None)

    def block(self, chat_id: int, kicked: bool = False) -> None:
        """The user blocks the bot, or (groups) the bot is removed; sends then get 403."""
        state = self._known_chat(chat_id)
        if state.type == "private":
            state.forbidden = "Forbidden: bot was blocked by the user"
        else:
            kind = "supergroup" if state.type == "supergroup" else "group"
            how = f"was kicked from the {kind}" if kicked else f"is not a member of the {kind}"
            state.forbidden = f"Forbidden: bot {how} chat"
            state.members[self.bot_id] = "kicked" if kicked else "left"
        self._bump()

    def unblock(self, chat_id: int) -> None:
        """Undo ``block``: the user restarts the bot, or the bot is added back."""
        state = self._known_chat(chat_id)
        state.forbidden = None
        state.members.pop(self.bot_id, None)

    # -------------------------------------------------------------- reading back

    def chat(self, chat_id: int) -> JSONDict:
        """The Chat object registered under ``chat_id``."""
        return self._known_chat(chat_id).chat

    def messages(self, chat_id: int, thread_id: int | None = None) -> list[JSONDict]:
        """The bot's messages still in the chat (current state after edits), oldest first."""
        state = self._chats.get(chat_id)
        if state is None:
            return []
        return [
            m
            for _, m in sorted(state.messages.items())
            if m.get("from", {}).get("id") == self.bot_id
            and "forum_topic_created" not in m
            and (thread_id is None or m.get("message_thread_id") == thread_id)
        ]

    def edits(self, chat_id: int, message_id: int) -> list[ApiCall]:
        """The successful edit calls of one message, in order."""
        return list(self._edits.get((chat_id, message_id), []))

    def commands_for(
        self, scope: str | JSONDict = "default", language_code: str = ""
    ) -> list[JSONDict]:
        """The commands set for a scope (type name or BotCommandScope dict) and language."""
        given = {"type": scope} if isinstance(scope, str) else scope
        return list(
            self.commands.get(scope_key({"scope": given, "language_code": language_code}), [])
        )

    @property
    def pending_updates(self) -> list[JSONDict]:
        """Updates not yet confirmed by ``getUpdates`` nor accepted by the webhook."""
        return list(self._updates)

    # ------------------------------------------------------------------ internals

    def _bump(self) -> None:
        """Wake everything waiting for a change (long polls, webhook worker, waiters)."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _register(self, chat: JSONDict) -> ChatState:
        state = self._chats.get(int(chat["id"]))
        if state is None:
            state = self._chats[int(chat["id"])] = ChatState(chat)
        else:
            state.chat = chat
        return state

    def _known_chat(self, chat_id: int) -> ChatState:
        try:
            return self._chats[int(chat_id)]
        except KeyError:
            raise ValueError(f"unknown chat {chat_id}: create it with private_chat/group") from None
