"""The plain records the fake Discord keeps: gateway intent bits, one guild's state, one
interaction and what the bot answered to it; and what a guild's state yields: its full
GUILD_CREATE payload and a member's resolved permissions."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bot.testing.discord.permissions import channel_permissions, guild_permissions
from bot.testing.discord.wire import JSONDict, iso

__all__ = [
    "PRIVILEGED",
    "GuildState",
    "Intents",
    "Interaction",
    "guild_create_payload",
    "member_permissions",
]

PRIVILEGED = (1 << 1) | (1 << 8) | (1 << 15)  # GUILD_MEMBERS, GUILD_PRESENCES, MESSAGE_CONTENT


class Intents:
    """Gateway intent bits the fake gates events on."""

    GUILDS = 1 << 0
    GUILD_MEMBERS = 1 << 1
    GUILD_PRESENCES = 1 << 8
    GUILD_MESSAGES = 1 << 9
    GUILD_MESSAGE_REACTIONS = 1 << 10
    DIRECT_MESSAGES = 1 << 12
    MESSAGE_CONTENT = 1 << 15


@dataclass(slots=True)
class GuildState:
    """One guild: its payload (without the GUILD_CREATE-only lists), roles, members."""

    guild: JSONDict
    roles: dict[int, JSONDict] = field(default_factory=dict)
    channels: list[int] = field(default_factory=list)
    members: dict[int, JSONDict] = field(default_factory=dict)
    overrides: dict[int, int] = field(default_factory=dict)  # member(..., permissions=)

    @property
    def id(self) -> int:
        return int(self.guild["id"])

    @property
    def owner_id(self) -> int:
        return int(self.guild["owner_id"])


@dataclass(slots=True)
class Interaction:
    """One interaction the fake dispatched and what the bot answered to it.

    ``acked`` is the callback type once acknowledged; ``original_id`` the response message
    (the deferred "thinking" one until the first followup fills it); ``created`` monotonic.
    """

    payload: JSONDict
    created: float = field(default_factory=time.monotonic)
    acked: int | None = None
    original_id: int | None = None
    followup_ids: list[int] = field(default_factory=list)

    @property
    def id(self) -> int:
        return int(self.payload["id"])

    @property
    def token(self) -> str:
        return str(self.payload["token"])

    @property
    def type(self) -> int:
        return int(self.payload["type"])

    @property
    def channel_id(self) -> int:
        return int(self.payload["channel_id"])


def guild_create_payload(state: GuildState, channels: list[JSONDict]) -> JSONDict:
    """The full GUILD_CREATE payload of a guild as it is now (``channels`` in guild order)."""
    members = list(state.members.values())
    return {
        **state.guild,
        "roles": list(state.roles.values()),
        "channels": [
            {k: v for k, v in c.items() if k != "guild_id"}
            for c in channels
            if c["type"] not in (10, 11, 12)
        ],
        "threads": [c for c in channels if c["type"] in (10, 11, 12)],
        "members": members,
        "member_count": len(members),
        "presences": [],
        "voice_states": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "joined_at": members[0]["joined_at"] if members else iso(),
        "large": False,
        "unavailable": False,
        "lazy": True,
    }


def member_permissions(state: GuildState, user_id: int, overwrites: list[JSONDict]) -> int:
    """A user's permissions in a channel of ``state`` with these overwrites; 0 for a
    non-member."""
    member = state.members.get(user_id)
    if member is None:
        return 0
    roles = [int(r) for r in member["roles"]]
    base = guild_permissions(
        state.id, state.owner_id, state.roles, user_id, roles, state.overrides.get(user_id)
    )
    return channel_permissions(base, state.id, overwrites, user_id, roles)
