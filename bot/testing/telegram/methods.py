"""Bot API methods of the fake Telegram server that need no I/O: messages, members, commands.

Each check runs in the real server's order with its exact error text, because bots branch
on those texts (``message is not modified`` is routinely swallowed, ``chat not found`` is
not). The polling and webhook methods live in ``delivery`` and ``server``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.testing.telegram.chats import ChatAction, ChatState, new_message
from bot.testing.telegram.files import TelegramFiles
from bot.testing.telegram.parse_html import TelegramHTMLError, parse_html, utf16_len
from bot.testing.telegram.payloads import (
    chat_full_info,
    inline_markup,
    member_json,
    normalize_entities,
    scope_key,
    trim_text,
    with_auto_entities,
)
from bot.testing.telegram.wire import (
    ApiCall,
    ApiError,
    JSONDict,
    bad_request,
    get_bool,
    get_int,
    get_str,
)

__all__ = ["BotApi", "Described", "Handler"]

MAX_TEXT = 4096
NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)
CHAT_ACTIONS = frozenset(
    {
        "typing", "upload_photo", "record_video", "upload_video", "record_voice",
        "upload_voice", "upload_document", "choose_sticker", "find_location",
        "record_video_note", "upload_video_note",
    }
)  # fmt: skip
_COMMAND_RE = re.compile(r"[a-z0-9_]{1,32}")
Handler = Callable[[JSONDict, ApiCall], Any]


@dataclass(frozen=True, slots=True)
class Described:
    """A result that also carries the response's ``description`` (``Webhook was set``)."""

    result: Any
    description: str


class BotApi(TelegramFiles):
    """The message, member and command methods, keyed by lower-cased method name."""

    def _handlers(self) -> dict[str, Handler]:
        return {
            "getMe": self._get_me,
            "sendMessage": self._send_message,
            "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "deleteMessage": self._delete_message,
            "sendChatAction": self._send_chat_action,
            "getChat": self._get_chat,
            "getChatMember": self._get_chat_member,
            "getChatAdministrators": self._get_chat_administrators,
            "getChatMemberCount": self._get_chat_member_count,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "answerCallbackQuery": self._answer_callback_query,
            "getFile": self._get_file,
        }

    # ------------------------------------------------------------------ messages

    def _get_me(self, params: JSONDict, call: ApiCall) -> JSONDict:
        return {
            **self.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": not self.privacy_mode,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    def _send_message(self, params: JSONDict, call: ApiCall) -> JSONDict:
        state = self._resolve_chat(params)
        self._check_writable(state)
        text, entities = self._compose(params)
        target = self._reply_target(state, params)
        thread_id = self._thread(state, params)
        markup = self._inline_markup(params)
        message = new_message(state, self.bot_user, thread_id=thread_id, reply_to=target)
        message["text"] = text
        if entities:
            message["entities"] = entities
        if markup is not None:
            message["reply_markup"] = markup
        self.sent.append(message)
        return message

    def _edit_message_text(self, params: JSONDict, call: ApiCall) -> JSONDict:
        state, message = self._editable(params)
        if "text" not in message:
            raise bad_request("there is no text in the message to edit")
        text, entities = self._compose(params)
        markup = self._inline_markup(params)
        current = (message["text"], message.get("entities", []), message.get("reply_markup"))
        if (text, entities, markup) == current:
            raise bad_request(NOT_MODIFIED)
        message["text"] = text
        self._set_optional(message, "entities", entities or None)
        return self._finish_edit(state, message, markup, call)

    def _edit_message_reply_markup(self, params: JSONDict, call: ApiCall) -> JSONDict:
        state, message = self._editable(params)
        markup = self._inline_markup(params)
        if markup == message.get("reply_markup"):
            raise bad_request(NOT_MODIFIED)
        return self._finish_edit(state, message, markup, call)

    def _delete_message(self, params: JSONDict, call: ApiCall) -> bool:
        state = self._resolve_chat(params)
        message_id = self._message_id(params)
        message = state.messages.get(message_id)
        if message is None or "forum_topic_created" in message:
            raise bad_request("message to delete not found")
        mine = message.get("from", {}).get("id") == self.bot_id
        admin = state.members.get(self.bot_id) in ("administrator", "creator")
        if not mine and state.type != "private" and not admin:
            raise bad_request("message can't be deleted")
        del state.messages[message_id]
        self.deleted.append((state.id, message_id))
        return True

    def _send_chat_action(self, params: JSONDict, call: ApiCall) -> bool:
        state = self._resolve_chat(params)
        self._check_writable(state)
        action = get_str(params, "action") or ""
        if action not in CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        thread_id = self._thread(state, params)
        self.actions.append(ChatAction(state.id, action, thread_id, call.at))
        return True

    # ------------------------------------------------------------ chats, members

    def _get_chat(self, params: JSONDict, call: ApiCall) -> JSONDict:
        return chat_full_info(self._resolve_chat(params).chat)

    def _get_chat_member(self, params: JSONDict, call: ApiCall) -> JSONDict:
        state = self._resolve_chat(params)
        user_id = get_int(params, "user_id", "invalid user_id specified")
        if user_id is None or user_id <= 0:
            raise bad_request("invalid user_id specified")
        if user_id == self.bot_id:
            return member_json(self.bot_user, state.members.get(user_id, "member"))
        user = self.users.get(user_id)
        if user is None or (state.type == "private" and user_id != state.id):
            raise bad_request("user not found")
        if state.type == "private":
            return member_json(user, "member")
        return member_json(user, state.members.get(user_id, "left"))

    def _get_chat_administrators(self, params: JSONDict, call: ApiCall) -> list[JSONDict]:
        state = self._resolve_chat(params)
        if state.type == "private":
            raise bad_request("there are no administrators in the private chat")
        ranked = sorted(
            (status != "creator", uid)
            for uid, status in state.members.items()
            if status in ("creator", "administrator")
        )
        return [
            member_json(
                self.bot_user if uid == self.bot_id else self.users[uid], state.members[uid]
            )
            for _, uid in ranked
            if uid == self.bot_id or uid in self.users
        ]

    def _get_chat_member_count(self, params: JSONDict, call: ApiCall) -> int:
        state = self._resolve_chat(params)
        if state.type == "private":
            return 2
        present = {
            u for u, s in state.members.items() if s in ("creator", "administrator", "member")
        }
        if state.members.get(self.bot_id, "member") == "member":
            present.add(self.bot_id)
        return len(present)

    # ------------------------------------------------------------------ commands

    def _set_my_commands(self, params: JSONDict, call: ApiCall) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise bad_request("can't parse commands JSON object")
        if len(commands) > 100:
            raise bad_request("too many commands specified")
        clean: list[JSONDict] = []
        for item in commands:
            if not isinstance(item, dict):
                raise bad_request("can't parse BotCommand")
            command = str(item.get("command", "")).removeprefix("/")
            description = str(item.get("description", "")).strip()
            if not _COMMAND_RE.fullmatch(command):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
            clean.append({"command": command, "description": description})
        key = scope_key(params)
        if clean:
            self.commands[key] = clean
        else:
            self.commands.pop(key, None)
        return True

    def _get_my_commands(self, params: JSONDict, call: ApiCall) -> list[JSONDict]:
        return list(self.commands.get(scope_key(params), []))

    def _delete_my_commands(self, params: JSONDict, call: ApiCall) -> bool:
        self.commands.pop(scope_key(params), None)
        return True

    def _answer_callback_query(self, params: JSONDict, call: ApiCall) -> bool:
        query_id = get_str(params, "callback_query_id") or ""
        if query_id not in self._query_ids:
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        text = get_str(params, "text")
        if text is not None and len(text) > 200:
            raise bad_request("MESSAGE_TOO_LONG")
        self._query_ids.discard(query_id)
        self.callback_answers.append(
            {
                "callback_query_id": query_id,
                "text": text,
                "show_alert": get_bool(params, "show_alert"),
                "url": get_str(params, "url"),
                "cache_time": get_int(params, "cache_time") or 0,
            }
        )
        return True

    # ------------------------------------------------------------------- helpers

    def _compose(self, params: JSONDict) -> tuple[str, list[JSONDict]]:
        """Text and entities after parse_mode, trimming and the server's own detection."""
        text = get_str(params, "text") or ""
        if not text.strip():
            raise bad_request("message text is empty")
        mode = (get_str(params, "parse_mode") or "").lower()
        if mode == "html":
            try:
                text, entities = parse_html(text)
            except TelegramHTMLError as exc:
                raise ApiError(400, exc.description) from None
        elif mode in ("", "none"):
            entities = normalize_entities(text, params.get("entities"))
        elif mode in ("markdown", "markdownv2"):
            entities = []  # accepted, not parsed: the kit validates HTML only
        else:
            raise bad_request("unsupported parse_mode")
        text, entities = trim_text(text, entities)
        if not text:
            raise bad_request("message text is empty")
        if utf16_len(text) > MAX_TEXT:
            raise bad_request("message is too long")
        resolved: list[JSONDict] = []
        for entity in entities:
            if entity["type"] == "text_mention":
                user = self.users.get(int(entity.get("user", {}).get("id", 0)))
                if user is None:
                    continue
                entity = {**entity, "user": {k: v for k, v in user.items() if k != "language_code"}}
            resolved.append(entity)
        return text, with_auto_entities(text, resolved)

    def _reply_target(self, state: ChatState, params: JSONDict) -> JSONDict | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, dict):
            message_id = get_int(reply, "message_id")
            allow = get_bool(reply, "allow_sending_without_reply")
            if reply.get("chat_id") not in (None, state.id, str(state.id)):
                state = self._resolve_chat(reply)
        else:
            message_id = get_int(params, "reply_to_message_id")
            allow = get_bool(params, "allow_sending_without_reply")
        if not message_id:
            return None
        target = state.messages.get(message_id)
        if target is None and not allow:
            raise bad_request("message to be replied not found")
        return target

    def _thread(self, state: ChatState, params: JSONDict) -> int | None:
        thread_id = get_int(params, "message_thread_id")
        if not thread_id:
            return None
        known = (
            thread_id in state.topics
            if state.chat.get("is_forum")
            else state.type == "supergroup" and thread_id in state.messages
        )
        if not known:
            raise bad_request("message thread not found")
        return thread_id

    def _inline_markup(self, params: JSONDict) -> JSONDict | None:
        try:
            return inline_markup(params.get("reply_markup"))
        except ValueError as exc:
            raise bad_request(str(exc)) from None

    def _resolve_chat(self, params: JSONDict, name: str = "chat_id") -> ChatState:
        """The chat a Bot API call names, or the server's error."""
        raw = params.get(name)
        if raw is None or raw == "":
            raise bad_request(f"{name} is empty")
        if isinstance(raw, str) and raw.startswith("@"):
            wanted = raw[1:].lower()
            for candidate in self._chats.values():
                if str(candidate.chat.get("username", "")).lower() == wanted:
                    return candidate
            raise bad_request("chat not found")
        try:
            chat_id = get_int(params, name)
        except ApiError:
            raise bad_request("chat not found") from None
        state = self._chats.get(chat_id or 0)
        if state is None:
            raise bad_request("chat not found")
        return state

    def _check_writable(self, state: ChatState) -> None:
        """403 while blocked/kicked, then 400 with ``migrate_to_chat_id`` after an upgrade."""
        if state.forbidden is not None:
            raise ApiError(403, state.forbidden)
        if state.migrated_to is not None:
            raise bad_request(
                "group chat was upgraded to a supergroup chat",
                {"migrate_to_chat_id": state.migrated_to},
            )

    def _message_id(self, params: JSONDict) -> int:
        message_id = get_int(params, "message_id", "message identifier is not specified")
        if not message_id:
            raise bad_request("message identifier is not specified")
        return message_id

    def _editable(self, params: JSONDict) -> tuple[ChatState, JSONDict]:
        if params.get("inline_message_id") and params.get("chat_id") is None:
            raise bad_request("MESSAGE_ID_INVALID")
        state = self._resolve_chat(params)
        self._check_writable(state)
        message = state.messages.get(self._message_id(params))
        if message is None:
            raise bad_request("message to edit not found")
        if message.get("from", {}).get("id") != self.bot_id:
            raise bad_request("message can't be edited")
        return state, message

    def _finish_edit(
        self, state: ChatState, message: JSONDict, markup: JSONDict | None, call: ApiCall
    ) -> JSONDict:
        self._set_optional(message, "reply_markup", markup)
        message["edit_date"] = int(time.time())
        self._edits.setdefault((state.id, int(message["message_id"])), []).append(call)
        return message

    @staticmethod
    def _set_optional(message: JSONDict, key: str, value: Any) -> None:
        if value is None:
            message.pop(key, None)
        else:
            message[key] = value
