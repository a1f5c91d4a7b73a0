"""Builders of realistic Bot API JSON: users, chats, members, and message entities.

The shapes follow what the real server sends (checked against aiogram's pydantic types), so a
bot under test parses them exactly as it would parse production updates. Entities are found
the way Telegram finds them in user text (mentions, commands, links, hashtags), with UTF-16
offsets: the classic bug is slicing a Python string by a Telegram offset after an emoji.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from bot.testing.telegram.parse_html import sort_entities, utf16_len

JSONDict = dict[str, Any]

__all__ = [
    "ADMIN_RIGHTS",
    "ANONYMOUS_ADMIN",
    "chat_full_info",
    "find_entities",
    "inline_markup",
    "member_json",
    "normalize_entities",
    "photo_sizes",
    "quoted",
    "scope_key",
    "trim_text",
    "user_json",
]

ANONYMOUS_ADMIN: JSONDict = {
    "id": 1087968824,
    "is_bot": True,
    "first_name": "Group",
    "username": "GroupAnonymousBot",
}
# Every right aiogram's ChatMemberAdministrator requires, granted (the usual admin preset).
ADMIN_RIGHTS: JSONDict = {
    "can_be_edited": False,
    "is_anonymous": False,
    "can_manage_chat": True,
    "can_delete_messages": True,
    "can_manage_video_chats": True,
    "can_restrict_members": True,
    "can_promote_members": False,
    "can_change_info": True,
    "can_invite_users": True,
    "can_post_stories": True,
    "can_edit_stories": True,
    "can_delete_stories": True,
    "can_send_welcome_messages": True,
    "can_pin_messages": True,
    "can_manage_topics": True,
}
MEMBER_STATUSES = frozenset({"creator", "administrator", "member", "left", "kicked"})
# Where an entity may start: not glued to a preceding word (TDLib's is_word_character).
_URL_RE = re.compile(r"(?<![\w@/])https?://[^\s<>\"]+", re.IGNORECASE)
_MENTION_RE = re.compile(r"(?<![\w@/])@[A-Za-z0-9_]{3,32}(?![\w@])")
_COMMAND_RE = re.compile(r"(?<![\w/<>])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/<>@])")
_HASHTAG_RE = re.compile(r"(?<![\w#])#\w*[^\W\d_]\w*", re.UNICODE)
_TRAILING = ".,;:!?'\")]}"
_FORMATTING_KEYS = {
    "text_link": ("url",),
    "text_mention": ("user",),
    "pre": ("language",),
    "custom_emoji": ("custom_emoji_id",),
}
_BUTTON_ACTIONS = (
    "url", "callback_data", "web_app", "login_url", "switch_inline_query",
    "switch_inline_query_current_chat", "switch_inline_query_chosen_chat", "copy_text",
    "callback_game", "pay",
)  # fmt: skip
_BUTTON = "can't parse inline keyboard button: "
_ATOMIC = frozenset({"code", "pre", "text_link", "text_mention", "custom_emoji", "url"})


def user_json(
    id: int,
    first_name: str,
    username: str | None = None,
    *,
    is_bot: bool = False,
    last_name: str | None = None,
) -> JSONDict:
    """A ``User`` object; optional fields are omitted when empty, as the server does."""
    user: JSONDict = {"id": id, "is_bot": is_bot, "first_name": first_name}
    if last_name:
        user["last_name"] = last_name
    if username:
        user["username"] = username
    if not is_bot:
        user["language_code"] = "en"
    return user


def member_json(user: JSONDict, status: str) -> JSONDict:
    """A ``ChatMember`` object of the given status, with every field aiogram requires."""
    public_user = {k: v for k, v in user.items() if k != "language_code"}
    if status == "creator":
        return {"status": "creator", "user": public_user, "is_anonymous": False}
    if status == "administrator":
        return {"status": "administrator", "user": public_user, **ADMIN_RIGHTS}
    if status == "kicked":
        return {"status": "kicked", "user": public_user, "until_date": 0}
    return {"status": status, "user": public_user}


def chat_full_info(chat: JSONDict, bot_user: JSONDict | None = None) -> JSONDict:
    """A minimal ``ChatFullInfo`` for ``getChat``: the chat plus the always-present fields."""
    info: JSONDict = dict(chat)
    info["accent_color_id"] = int(chat["id"]) % 7
    info["max_reaction_count"] = 11
    info["accepted_gift_types"] = {
        "unlimited_gifts": chat["type"] == "private",
        "limited_gifts": chat["type"] == "private",
        "unique_gifts": chat["type"] == "private",
        "premium_subscription": chat["type"] == "private",
        "gifts_from_channels": chat["type"] == "private",
    }
    if chat["type"] in ("group", "supergroup"):
        info["permissions"] = {
            "can_send_messages": True,
            "can_send_photos": True,
            "can_send_other_messages": True,
            "can_add_web_page_previews": True,
            "can_invite_users": True,
        }
    return info


def photo_sizes(seed: str) -> list[JSONDict]:
    """The three sizes Telegram sends for a photo, with stable fake file ids."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    sizes = ((90, 67, 1_432), (320, 240, 17_345), (800, 600, 61_018))
    return [
        {
            "file_id": f"AgACAgIAAxkBAAI{digest[:24]}{n}",
            "file_unique_id": f"AQAD{digest[24:36]}{n}",
            "width": w,
            "height": h,
            "file_size": size,
        }
        for n, (w, h, size) in enumerate(sizes)
    ]


def quoted(message: JSONDict) -> JSONDict:
    """A message as nested in ``reply_to_message``: one level deep only, like Telegram."""
    nested = copy.deepcopy(message)
    nested.pop("reply_to_message", None)
    return nested


def _u16(text: str, index: int) -> int:
    return utf16_len(text[:index])


def _span(text: str, start: int, end: int) -> JSONDict:
    offset = _u16(text, start)
    return {"offset": offset, "length": utf16_len(text[start:end])}


def find_entities(text: str) -> list[JSONDict]:
    """Entities the server detects by itself: url, mention, bot_command, hashtag."""
    found: list[tuple[int, int, str]] = []
    for match in _URL_RE.finditer(text):
        end = match.end()
        while end > match.start() and text[end - 1] in _TRAILING:
            end -= 1
        found.append((match.start(), end, "url"))
    for kind, regex in (("mention", _MENTION_RE), ("bot_command", _COMMAND_RE)):
        found += [(m.start(), m.end(), kind) for m in regex.finditer(text)]
    found += [(m.start(), m.end(), "hashtag") for m in _HASHTAG_RE.finditer(text)]
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in found:  # urls first: a mention inside a link is part of it
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, kind))
    return sort_entities([{"type": k, **_span(text, s, e)} for s, e, k in kept])


def normalize_entities(text: str, entities: Any) -> list[JSONDict]:
    """Client-given entities cleaned like the server: known fields only, clamped, sorted."""
    if not isinstance(entities, list):
        return []
    total = utf16_len(text)
    out: list[JSONDict] = []
    for raw in entities:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            continue
        try:
            offset, length = int(raw["offset"]), int(raw["length"])
        except (KeyError, TypeError, ValueError):
            continue
        end = min(offset + length, total)
        offset = max(offset, 0)
        if end <= offset:
            continue
        entity: JSONDict = {"type": raw["type"], "offset": offset, "length": end - offset}
        for key in _FORMATTING_KEYS.get(raw["type"], ()):
            if raw.get(key) is not None:
                entity[key] = raw[key]
        out.append(entity)
    return sort_entities(out)


def with_auto_entities(text: str, entities: list[JSONDict]) -> list[JSONDict]:
    """Add detected links/mentions/commands that do not collide with atomic formatting."""
    merged = list(entities)
    for auto in find_entities(text):
        start, end = auto["offset"], auto["offset"] + auto["length"]
        if all(
            e["type"] not in _ATOMIC or end <= e["offset"] or start >= e["offset"] + e["length"]
            for e in entities
        ):
            merged.append(auto)
    return sort_entities(merged)


def trim_text(text: str, entities: list[JSONDict]) -> tuple[str, list[JSONDict]]:
    """Strip surrounding whitespace as the server does, shifting and clipping entities."""
    stripped = text.strip()
    if stripped == text:
        return text, entities
    lead = utf16_len(text[: len(text) - len(text.lstrip())])
    total = utf16_len(stripped)
    out: list[JSONDict] = []
    for entity in entities:
        start = max(entity["offset"] - lead, 0)
        end = min(entity["offset"] + entity["length"] - lead, total)
        if end > start:
            out.append({**entity, "offset": start, "length": end - start})
    return stripped, out


def inline_markup(markup: Any) -> JSONDict | None:
    """The inline keyboard a message keeps (reply keyboards are not echoed back).

    Raises ``ValueError`` with the server's text (without ``Bad Request: ``) when invalid.
    """
    if not isinstance(markup, dict) or "inline_keyboard" not in markup:
        return None
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ValueError(_BUTTON + 'field "inline_keyboard" must be an Array of Arrays')
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            raise ValueError(_BUTTON + "Text is not specified")
        if not any(button.get(k) is not None for k in _BUTTON_ACTIONS):
            raise ValueError(_BUTTON + "Text buttons are unallowed in the inline keyboard")
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode()) <= 64:
            raise ValueError("BUTTON_DATA_INVALID")
    return {"inline_keyboard": [[dict(b) for b in row] for row in rows if row]}


def scope_key(params: JSONDict) -> str:
    """Key of ``fake.commands``: the scope type alone (``default``, ``all_group_chats``) or,
    for scopes with a chat or user, its canonical JSON; ``/<language_code>`` appended if set.
    """
    scope = params.get("scope")
    if not isinstance(scope, dict) or not scope.get("type"):
        scope = {"type": "default"}
    canonical = dict(scope)
    for name in ("chat_id", "user_id"):
        value = scope.get(name)
        if isinstance(value, str) and value.lstrip("-").isdigit():
            canonical[name] = int(value)
    key = str(scope["type"]) if len(scope) == 1 else json.dumps(canonical, sort_keys=True)
    language = params.get("language_code") or ""
    return f"{key}/{language}" if language else key
