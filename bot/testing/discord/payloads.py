"""Discord object payloads for the fake Discord server: users, members, roles, guilds,
channels, threads, DMs, messages, mentions.

Every builder emits the keys discord.py reads with ``data[...]`` (it raises ``KeyError`` on a
missing one: members need ``flags`` and ``roles``, threads ``thread_metadata``, channels
``position``...), so the real client parses them exactly as it parses Discord's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from bot.testing.discord.wire import JSONDict, iso

__all__ = [
    "dm_json",
    "guild_json",
    "member_json",
    "mentioned_ids",
    "role_json",
    "text_channel_json",
    "thread_json",
    "user_json",
]


_USER_MENTION = re.compile(r"<@!?(\d{1,20})>")
_ROLE_MENTION = re.compile(r"<@&(\d{1,20})>")
_EVERYONE = re.compile(r"@(everyone|here)\b")


# ------------------------------------------------------------------ users, members, roles


def user_json(
    id: int, username: str, global_name: str | None = None, bot: bool = False
) -> JSONDict:
    """A User object (new username system: discriminator ``"0"``)."""
    user: JSONDict = {
        "id": str(id),
        "username": username,
        "discriminator": "0",
        "global_name": global_name,
        "avatar": None,
        "avatar_decoration_data": None,
        "banner": None,
        "accent_color": None,
        "public_flags": 0,
        "flags": 0,
        "collectibles": None,
        "primary_guild": None,
    }
    if bot:
        user["bot"] = True
    return user


def member_json(
    user: JSONDict,
    *,
    nick: str | None = None,
    roles: Iterable[int] = (),
    joined_at: str | None = None,
) -> JSONDict:
    """A guild Member object with its user (``flags``, ``joined_at``, ``roles`` included)."""
    return {
        "user": user,
        "nick": nick,
        "avatar": None,
        "banner": None,
        "roles": [str(r) for r in roles],
        "joined_at": joined_at or iso(),
        "premium_since": None,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "communication_disabled_until": None,
        "avatar_decoration_data": None,
    }


def role_json(
    id: int,
    name: str,
    permissions: int,
    *,
    position: int = 1,
    managed: bool = False,
    mentionable: bool = False,
) -> JSONDict:
    """A Role object; ``permissions`` is a string on the wire (it exceeds 2**53)."""
    return {
        "id": str(id),
        "name": name,
        "permissions": str(permissions),
        "position": position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "managed": managed,
        "mentionable": mentionable,
        "flags": 0,
    }


def guild_json(id: int, name: str, owner_id: int, locale: str) -> JSONDict:
    """A Guild object's own fields (GUILD_CREATE adds roles, channels, members...)."""
    return {
        "id": str(id),
        "name": name,
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "banner": None,
        "description": None,
        "owner_id": str(owner_id),
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "public_updates_channel_id": None,
        "safety_alerts_channel_id": None,
        "preferred_locale": locale,
        "features": [],
        "emojis": [],
        "stickers": [],
        "vanity_url_code": None,
        "max_members": 500000,
        "premium_progress_bar_enabled": False,
        "application_id": None,
    }


# ----------------------------------------------------------------------------- channels


def text_channel_json(
    guild_id: int,
    id: int,
    name: str,
    *,
    position: int = 0,
    topic: str | None = None,
    parent_id: int | None = None,
    nsfw: bool = False,
) -> JSONDict:
    """A GUILD_TEXT channel (type 0) with no permission overwrites yet."""
    return {
        "id": str(id),
        "type": 0,
        "guild_id": str(guild_id),
        "name": name,
        "position": position,
        "parent_id": None if parent_id is None else str(parent_id),
        "topic": topic,
        "nsfw": nsfw,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "default_auto_archive_duration": 1440,
        "default_thread_rate_limit_per_user": 0,
        "permission_overwrites": [],
        "flags": 0,
    }


def thread_json(
    channel: JSONDict, id: int, name: str, owner_id: int, *, private: bool = False
) -> JSONDict:
    """A PUBLIC_THREAD (11) or PRIVATE_THREAD (12) in ``channel``, open, not locked."""
    now = iso()
    return {
        "id": str(id),
        "type": 12 if private else 11,
        "guild_id": channel["guild_id"],
        "parent_id": channel["id"],
        "owner_id": str(owner_id),
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": now,
            "locked": False,
            "invitable": True,
            "create_timestamp": now,
        },
    }


def dm_json(id: int, recipient: JSONDict) -> JSONDict:
    """A DM channel (type 1) between the bot and ``recipient``."""
    return {
        "id": str(id),
        "type": 1,
        "last_message_id": None,
        "flags": 0,
        "recipients": [recipient],
    }


# ----------------------------------------------------------------------------- mentions


def mentioned_ids(content: str) -> tuple[list[int], list[int], bool]:
    """User ids, role ids (first occurrence order) and whether @everyone/@here appears."""
    users = list(dict.fromkeys(int(m) for m in _USER_MENTION.findall(content)))
    roles = list(dict.fromkeys(int(m) for m in _ROLE_MENTION.findall(content)))
    return users, roles, bool(_EVERYONE.search(content))


def allowed_mentions_filter(
    allowed: Any, users: list[int], roles: list[int], everyone: bool
) -> tuple[list[int], list[int], bool, bool | None]:
    """What a bot message really pings under ``allowed_mentions`` (absent: everything).

    Returns users, roles, everyone and ``replied_user`` (None when not specified, which pings
    the replied-to author only when ``allowed_mentions`` is absent altogether).
    """
    if not isinstance(allowed, dict):
        return users, roles, everyone, None
    parse = allowed.get("parse") or []
    explicit_users = {int(u) for u in allowed.get("users") or []}
    explicit_roles = {int(r) for r in allowed.get("roles") or []}
    kept_users = [u for u in users if "users" in parse or u in explicit_users]
    kept_roles = [r for r in roles if "roles" in parse or r in explicit_roles]
    replied = allowed.get("replied_user")
    return kept_users, kept_roles, everyone and "everyone" in parse, bool(replied)


# Keys the fake keeps on the bot's messages for tests to read, which Discord never sends.
RECORD_ONLY = frozenset({"allowed_mentions", "interaction_id", "guild_id"})


def strip_internal(message: Mapping[str, Any]) -> JSONDict:
    """The wire form of a stored message: without the record-only keys (nor a None
    ``message_reference``, which discord.py would try to parse)."""
    return {
        k: v
        for k, v in message.items()
        if k not in RECORD_ONLY and not (k == "message_reference" and v is None)
    }


def partial_member(member: JSONDict) -> JSONDict:
    """A member as embedded in MESSAGE_CREATE (no ``user`` key)."""
    return {k: v for k, v in member.items() if k != "user"}


def with_member(user: JSONDict, member: JSONDict | None) -> JSONDict:
    """A user in a guild message's ``mentions``: the user plus a partial ``member``."""
    found = dict(user)
    if member is not None:
        found["member"] = partial_member(member)
    return found


def as_snowflake(value: Any) -> int:
    """An id from a payload dict, int or numeric string."""
    if isinstance(value, Mapping):
        value = value["id"]
    return int(value)


def message_base(
    id: int,
    channel_id: int,
    author: JSONDict,
    content: str,
    *,
    type: int = 0,
    flags: int = 0,
    tts: bool = False,
    nonce: Any = None,
) -> JSONDict:
    """A Message object's always-present keys; mentions and references are filled by the
    caller, which knows the guild."""
    message: JSONDict = {
        "id": str(id),
        "type": type,
        "channel_id": str(channel_id),
        "author": author,
        "content": content,
        "timestamp": iso(),
        "edited_timestamp": None,
        "tts": tts,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "components": [],
        "pinned": False,
        "flags": flags,
    }
    if nonce is not None:
        message["nonce"] = nonce
    return message


def attachment_json(id: int, channel_id: int, filename: str, size: int) -> JSONDict:
    """An Attachment object for an uploaded file (URLs point nowhere, like a deleted CDN)."""
    url = f"https://cdn.discordapp.com/attachments/{channel_id}/{id}/{filename}"
    return {
        "id": str(id),
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": url.replace("cdn.discordapp.com", "media.discordapp.net"),
    }
