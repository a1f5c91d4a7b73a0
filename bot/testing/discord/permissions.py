"""Permission maths for the fake Discord server, resolved the way Discord documents it.

Owner, @everyone, roles, ADMINISTRATOR, then channel overwrites @everyone -> roles -> member:
that is how an interaction's ``member.permissions`` and ``app_permissions`` strings are
computed (discord.py's ``Interaction.permissions`` is just that string), and how the fake
decides whether the bot may post (50013 Missing Permissions) or even see a channel (50001).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.testing.discord.wire import JSONDict

__all__ = [
    "ALL_PERMISSIONS",
    "DEFAULT_EVERYONE_PERMISSIONS",
    "Perm",
    "channel_permissions",
    "guild_permissions",
]


class Perm:
    """Permission bits used by the fake's own checks (see Discord's permission table)."""

    CREATE_INSTANT_INVITE = 1 << 0
    ADMINISTRATOR = 1 << 3
    ADD_REACTIONS = 1 << 6
    STREAM = 1 << 9
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    SEND_TTS_MESSAGES = 1 << 12
    MANAGE_MESSAGES = 1 << 13
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    MENTION_EVERYONE = 1 << 17
    USE_EXTERNAL_EMOJIS = 1 << 18
    CONNECT = 1 << 20
    SPEAK = 1 << 21
    USE_VAD = 1 << 25
    CHANGE_NICKNAME = 1 << 26
    USE_APPLICATION_COMMANDS = 1 << 31
    REQUEST_TO_SPEAK = 1 << 32
    CREATE_PUBLIC_THREADS = 1 << 35
    CREATE_PRIVATE_THREADS = 1 << 36
    USE_EXTERNAL_STICKERS = 1 << 37
    SEND_MESSAGES_IN_THREADS = 1 << 38
    USE_EMBEDDED_ACTIVITIES = 1 << 39
    USE_SOUNDBOARD = 1 << 42
    USE_EXTERNAL_SOUNDS = 1 << 45
    SEND_VOICE_MESSAGES = 1 << 46
    SEND_POLLS = 1 << 49
    USE_EXTERNAL_APPS = 1 << 50


# Every permission bit Discord currently defines (discord.Permissions.all() in 2.7).
ALL_PERMISSIONS = 8_866_461_766_385_663
# What @everyone gets in a new guild: talk, read, react, use apps; nothing administrative.
DEFAULT_EVERYONE_PERMISSIONS = (
    Perm.CREATE_INSTANT_INVITE | Perm.ADD_REACTIONS | Perm.STREAM | Perm.VIEW_CHANNEL
    | Perm.SEND_MESSAGES | Perm.EMBED_LINKS | Perm.ATTACH_FILES | Perm.READ_MESSAGE_HISTORY
    | Perm.USE_EXTERNAL_EMOJIS | Perm.CONNECT | Perm.SPEAK | Perm.USE_VAD
    | Perm.CHANGE_NICKNAME | Perm.USE_APPLICATION_COMMANDS | Perm.REQUEST_TO_SPEAK
    | Perm.CREATE_PUBLIC_THREADS | Perm.CREATE_PRIVATE_THREADS | Perm.USE_EXTERNAL_STICKERS
    | Perm.SEND_MESSAGES_IN_THREADS | Perm.USE_EMBEDDED_ACTIVITIES | Perm.USE_SOUNDBOARD
    | Perm.USE_EXTERNAL_SOUNDS | Perm.SEND_VOICE_MESSAGES | Perm.SEND_POLLS
    | Perm.USE_EXTERNAL_APPS
)  # fmt: skip


def guild_permissions(
    guild_id: int,
    owner_id: int,
    roles: Mapping[int, JSONDict],
    user_id: int,
    member_roles: Iterable[int],
    override: int | None = None,
) -> int:
    """A member's guild-level permissions: owner, @everyone | roles, ADMINISTRATOR.

    ``override`` replaces the role-derived set (the fake's ``member(..., permissions=)``).
    """
    if user_id == owner_id:
        return ALL_PERMISSIONS
    perms = int(roles[guild_id]["permissions"]) if guild_id in roles else 0
    if override is not None:
        perms |= override
    else:
        for role_id in member_roles:
            if role_id in roles:
                perms |= int(roles[role_id]["permissions"])
    return ALL_PERMISSIONS if perms & Perm.ADMINISTRATOR else perms


def channel_permissions(
    base: int,
    guild_id: int,
    overwrites: Iterable[JSONDict],
    user_id: int,
    member_roles: Iterable[int],
) -> int:
    """Apply a channel's overwrites to guild-level ``base``: @everyone, then the member's roles
    together, then the member; ADMINISTRATOR bypasses all, no VIEW_CHANNEL means nothing."""
    if base & Perm.ADMINISTRATOR:
        return ALL_PERMISSIONS
    by_id = {(int(o["id"]), int(o["type"])): o for o in overwrites}
    perms = base
    everyone = by_id.get((guild_id, 0))
    if everyone is not None:
        perms = (perms & ~int(everyone["deny"])) | int(everyone["allow"])
    allow = deny = 0
    for role_id in member_roles:
        found = by_id.get((role_id, 0))
        if found is not None:
            allow |= int(found["allow"])
            deny |= int(found["deny"])
    perms = (perms & ~deny) | allow
    own = by_id.get((user_id, 1))
    if own is not None:
        perms = (perms & ~int(own["deny"])) | int(own["allow"])
    if not perms & Perm.VIEW_CHANNEL:
        return 0
    if not perms & Perm.SEND_MESSAGES:
        # Discord: without SEND_MESSAGES these text permissions are implicitly denied too.
        perms &= ~(
            Perm.SEND_TTS_MESSAGES | Perm.MENTION_EVERYONE | Perm.EMBED_LINKS | Perm.ATTACH_FILES
        )
    return perms
