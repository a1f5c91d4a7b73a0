"""The fake Discord's world: users, guilds, roles, members, channels, threads, DMs, messages,
interactions and application commands, plus what tests read back.

Building the world (``guild``, ``channel``, ``member`` ...) needs no I/O, so a test sets it up
before the bot connects; whatever is added while the bot is connected is also dispatched
(GUILD_CREATE, CHANNEL_CREATE, THREAD_CREATE, GUILD_ROLE_CREATE, GUILD_MEMBER_ADD), as
Discord would. The gateway and REST layers build on this class.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from bot.testing.discord.apps import Applications, new_app
from bot.testing.discord.cdn import CDN
from bot.testing.discord.payloads import (
    dm_json,
    guild_json,
    member_json,
    role_json,
    strip_internal,
    text_channel_json,
    thread_json,
    user_json,
)
from bot.testing.discord.permissions import (
    DEFAULT_EVERYONE_PERMISSIONS,
)
from bot.testing.discord.records import (
    PRIVILEGED,
    GuildState,
    Intents,
    Interaction,
    guild_create_payload,
    member_permissions,
)
from bot.testing.discord.wire import JSONDict, RecordedRequest, Snowflakes

__all__ = ["PRIVILEGED", "DiscordState", "GuildState", "Intents", "Interaction"]


class DiscordState(Applications):
    """Data and world-building controls of ``FakeDiscord`` (see ``bot.testing.fake_discord``)."""

    def __init__(
        self,
        token: str = "fake-discord-token.abc.def",
        app_id: int = 1_200_000_000_000_000_001,
        bot_name: str = "Parlour",
        privileged_intents: bool | int = True,
        heartbeat_interval: float = 41.25,
    ) -> None:
        first = new_app(token, app_id, bot_name, privileged_intents)
        self._apps = {app_id: first}  # every bot application, the first first
        self.heartbeat_interval = heartbeat_interval
        self.interaction_timeout = 3.0  # seconds to the initial callback (Discord: 3)
        self.interaction_token_ttl = 15 * 60.0  # followups and @original edits (Discord: 15 min)
        self.users: dict[int, JSONDict] = {app_id: first.user}
        self._dm_owner: dict[int, int] = {}  # DM channel id -> the application it is with
        self.requests: list[RecordedRequest] = []
        self.callbacks: list[JSONDict] = []
        self.typing: list[tuple[int, float]] = []
        self.deleted: list[tuple[int, int]] = []
        self.reactions: list[tuple[int, int, str]] = []
        self.identify: JSONDict | None = None
        self.presence: JSONDict | None = None
        self._ids = Snowflakes()
        self._guilds: dict[int, GuildState] = {}
        self._channels: dict[int, JSONDict] = {}
        self._messages: dict[int, JSONDict] = {}
        self._sent: list[JSONDict] = []
        self._interactions: dict[int, Interaction] = {}
        self._changed = asyncio.Event()
        self.cdn = CDN(on_change=self._bump)  # users' files (served once the fake listens)

    @property
    def allowed_intents(self) -> int:
        """The privileged intent bits the bot may request (the portal's toggles)."""
        if isinstance(self.privileged_intents, bool):
            return PRIVILEGED if self.privileged_intents else 0
        return self.privileged_intents & PRIVILEGED

    # ------------------------------------------------------------------- the world

    def user(
        self, id: int, name: str, global_name: str | None = None, bot: bool = False
    ) -> JSONDict:
        """A User (``name`` is the username); remembered for mentions and members."""
        user = user_json(id, name, global_name, bot)
        self.users[id] = user
        return user

    def guild(
        self,
        id: int,
        name: str,
        *,
        owner_id: int = 0,
        everyone_permissions: int = DEFAULT_EVERYONE_PERMISSIONS,
        locale: str = "en-US",
    ) -> JSONDict:
        """A guild the bot is in (its @everyone role has id ``id``, the bot is a member).

        ``owner_id`` 0 means nobody the test knows owns it; the owner has every permission.
        """
        payload = guild_json(id, name, owner_id, locale)
        state = self._guilds[id] = GuildState(payload)
        state.roles[id] = role_json(id, "@everyone", everyone_permissions, position=0)
        state.members[self.application_id] = member_json(self.bot_user)
        self._dispatch_world("GUILD_CREATE", lambda: self.guild_create(id), Intents.GUILDS)
        return payload

    def role(
        self, guild: JSONDict, id: int, name: str, permissions: int, *, position: int | None = None
    ) -> JSONDict:
        """A role in ``guild``; ``permissions`` is the bit set (``discord.Permissions.value``)."""
        state = self._guild_state(guild)
        place = len(state.roles) if position is None else position
        role = state.roles[id] = role_json(id, name, permissions, position=place)
        self._dispatch_world(
            "GUILD_ROLE_CREATE", lambda: {"guild_id": str(state.id), "role": role}, Intents.GUILDS
        )
        return role

    def member(
        self,
        guild: JSONDict,
        user: JSONDict,
        *,
        nick: str | None = None,
        roles: list[int] | None = None,
        permissions: int | None = None,
    ) -> JSONDict:
        """Make ``user`` a member of ``guild`` (or update it); returns the Member with user.

        ``permissions`` replaces what the roles grant (on top of @everyone), for tests that
        care about a permission rather than about roles.
        """
        state = self._guild_state(guild)
        user_id = int(user["id"])
        self.users.setdefault(user_id, user)
        known = state.members.get(user_id)
        member = member_json(
            user, nick=nick, roles=roles or [], joined_at=known["joined_at"] if known else None
        )
        state.members[user_id] = member
        if permissions is None:
            state.overrides.pop(user_id, None)
        else:
            state.overrides[user_id] = permissions
        event = "GUILD_MEMBER_UPDATE" if known else "GUILD_MEMBER_ADD"
        self._dispatch_world(
            event, lambda: {**member, "guild_id": str(state.id)}, Intents.GUILD_MEMBERS
        )
        if known is None and user_id in self._apps and self._is_connected():  # a bot invited
            build = copy.deepcopy(self.guild_create(state.id))
            self._dispatch("GUILD_CREATE", build, Intents.GUILDS, to_app=user_id)
        return member

    def channel(
        self,
        guild: JSONDict,
        id: int,
        name: str,
        *,
        topic: str | None = None,
        parent_id: int | None = None,
        nsfw: bool = False,
    ) -> JSONDict:
        """A text channel in ``guild`` with no permission overwrites."""
        state = self._guild_state(guild)
        channel = text_channel_json(
            state.id,
            id,
            name,
            position=len(state.channels),
            topic=topic,
            parent_id=parent_id,
            nsfw=nsfw,
        )
        self._channels[id] = channel
        state.channels.append(id)
        self._dispatch_world("CHANNEL_CREATE", lambda: channel, Intents.GUILDS)
        return channel

    def thread(
        self,
        channel: JSONDict,
        id: int,
        name: str,
        *,
        owner: JSONDict | None = None,
        private: bool = False,
    ) -> JSONDict:
        """A public (or private) thread under a text channel, started by ``owner`` (the bot)."""
        parent = self._known_channel(int(channel["id"]))
        if parent["type"] != 0:
            raise ValueError(f"threads live in text channels, channel {parent['id']} is not one")
        owner_id = int(owner["id"]) if owner else self.application_id
        thread = thread_json(parent, id, name, owner_id, private=private)
        self._channels[id] = thread
        self._guild_state_by_id(int(parent["guild_id"])).channels.append(id)
        self._dispatch_world(
            "THREAD_CREATE", lambda: {**thread, "newly_created": True}, Intents.GUILDS
        )
        return thread

    def dm(self, user: JSONDict, id: int | None = None) -> JSONDict:
        """The DM channel between the bot and ``user`` (one per user and bot, like Discord)."""
        user_id = int(user["id"])
        self.users.setdefault(user_id, user)
        app_id = self.application_id
        for channel in self._channels.values():
            if (
                channel["type"] == 1
                and int(channel["recipients"][0]["id"]) == user_id
                and self._dm_owner.get(int(channel["id"])) == app_id
            ):
                return channel
        channel = dm_json(id or self._ids.next(), self.users[user_id])
        self._channels[int(channel["id"])] = channel
        self._dm_owner[int(channel["id"])] = app_id
        return channel

    def set_channel_overwrite(
        self,
        channel: JSONDict,
        role_or_member_id: int,
        allow: int = 0,
        deny: int = 0,
        member: bool = False,
    ) -> None:
        """Set a permission overwrite on a channel for a role (the guild id is @everyone) or,
        with ``member=True``, a member; threads follow their parent's overwrites."""
        target_id = role_or_member_id
        stored = self._known_channel(int(channel["id"]))
        kind = 1 if member else 0
        overwrites = [
            o
            for o in stored["permission_overwrites"]
            if (int(o["id"]), o["type"]) != (target_id, kind)
        ]
        overwrites.append(
            {"id": str(target_id), "type": kind, "allow": str(allow), "deny": str(deny)}
        )
        stored["permission_overwrites"] = overwrites
        self._dispatch_world("CHANNEL_UPDATE", lambda: stored, Intents.GUILDS)

    # ------------------------------------------------------------------ reading back

    @property
    def sent(self) -> list[JSONDict]:
        """Every message the bot created (channel sends, interaction responses, followups), in
        order, current state after edits; deferred "thinking" placeholders are left out until
        filled. Each has ``channel_id``, ``content``, ``flags``, ``allowed_mentions`` and
        ``message_reference`` (None when absent), ``interaction_id`` for interaction ones.
        With several bots: the acting bot's (``FakeBot.sent()``)."""
        me = str(self.application_id)
        return [m for m in self._sent if not int(m["flags"]) & 128 and m["author"]["id"] == me]

    def messages(self, channel_id: int) -> list[JSONDict]:
        """The bot's messages in a channel (ephemeral ones included, deleted ones not)."""
        gone = {m for c, m in self.deleted if c == channel_id}
        return [
            m for m in self.sent if int(m["channel_id"]) == channel_id and int(m["id"]) not in gone
        ]

    def message_by_id(self, message_id: int) -> JSONDict | None:
        """Any stored message (bot or user) by id, with the fake's record-only keys."""
        return self._messages.get(message_id)

    def commands(self, guild_id: int | None = None) -> list[JSONDict]:
        """The application commands registered globally (None) or for a guild."""
        return copy.deepcopy(self._commands.get(guild_id, []))

    def interaction(self, interaction_id: int) -> Interaction:
        try:
            return self._interactions[int(interaction_id)]
        except KeyError:
            raise ValueError(f"no interaction {interaction_id}") from None

    def followups(self, interaction_id: int) -> list[JSONDict]:
        """The followup messages of an interaction, current state (deleted ones excluded)."""
        found = self.interaction(interaction_id)
        return [self._messages[i] for i in found.followup_ids if i in self._messages]

    def original(self, interaction_id: int) -> JSONDict | None:
        """The interaction's response message, None before any (or after its deletion)."""
        found = self.interaction(interaction_id)
        return None if found.original_id is None else self._messages.get(found.original_id)

    def guild_create(self, guild_id: int) -> JSONDict:
        """The full GUILD_CREATE payload of a guild as it is now."""
        state = self._guild_state_by_id(guild_id)
        return guild_create_payload(state, [self._channels[c] for c in state.channels])

    # ------------------------------------------------------------------- permissions

    def permissions_in(self, channel_id: int, user_id: int) -> int:
        """A user's resolved permissions in a channel (threads use their parent's overwrites);
        0 for a non-member, the text set in DMs."""
        channel = self._known_channel(channel_id)
        if channel.get("guild_id") is None:
            return DEFAULT_EVERYONE_PERMISSIONS
        state = self._guild_state_by_id(int(channel["guild_id"]))
        holder = (
            self._channels[int(channel["parent_id"])]
            if channel["type"] in (10, 11, 12)
            else channel
        )
        return member_permissions(state, user_id, holder["permission_overwrites"])

    # ------------------------------------------------------------------- internals

    def _bump(self) -> None:
        """Wake every waiter: something changed."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_change(self, timeout: float) -> None:  # noqa: ASYNC109
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout)

    def _dispatch(
        self,
        event: str,
        data: JSONDict,
        intent: int = 0,
        *,
        scrub: bool = False,
        unscrubbed: frozenset[int] = frozenset(),
        to_app: int | None = None,
    ) -> int:
        """Send a dispatch to every session that may see it; implemented by the gateway."""
        raise NotImplementedError

    def _is_connected(self) -> bool:
        return False

    def _dispatch_world(self, event: str, build: Any, intent: int) -> None:
        if self._is_connected():
            self._dispatch(event, copy.deepcopy(build()), intent)
        self._bump()

    def _guild_state(self, guild: JSONDict) -> GuildState:
        return self._guild_state_by_id(int(guild["id"]))

    def _guild_state_by_id(self, guild_id: int) -> GuildState:
        try:
            return self._guilds[guild_id]
        except KeyError:
            raise ValueError(f"unknown guild {guild_id}: create it with fake.guild()") from None

    def _known_channel(self, channel_id: int) -> JSONDict:
        try:
            return self._channels[int(channel_id)]
        except KeyError:
            raise ValueError(f"unknown channel {channel_id}: create it first") from None

    def _guild_of(self, channel: JSONDict) -> GuildState | None:
        guild_id = channel.get("guild_id")
        return None if guild_id is None else self._guilds.get(int(guild_id))

    def _wire(self, message: JSONDict) -> JSONDict:
        return strip_internal(message)
