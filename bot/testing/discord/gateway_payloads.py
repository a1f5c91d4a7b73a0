"""The payloads the fake gateway writes itself rather than relays from the world: READY for a
new session (its guilds unavailable until their GUILD_CREATE, its shard if it asked for one),
GUILD_MEMBERS_CHUNK answering REQUEST_GUILD_MEMBERS (by ids, by a name's prefix, up to a
limit), and the application flags READY and ``GET /applications/@me`` carry. Pure: ``gateway.py``
decides when each is sent and to which session."""

from __future__ import annotations

from bot.testing.discord.records import GuildState, Intents
from bot.testing.discord.sessions import GatewaySession
from bot.testing.discord.wire import JSONDict

__all__ = ["application_flags", "members_chunk", "ready_payload"]


def ready_payload(
    session: GatewaySession,
    user: JSONDict,
    guild_ids: list[int],
    *,
    resume_url: str,
    application_id: int,
    flags: int,
) -> JSONDict:
    """READY for ``session``, identified as the bot ``user``; ``guild_ids``: the guilds it
    gets (each GUILD_CREATE follows)."""
    ready: JSONDict = {
        "v": 10,
        "user": user,
        "user_settings": {},
        "guilds": [{"id": str(g), "unavailable": True} for g in guild_ids],
        "private_channels": [],
        "relationships": [],
        "presences": [],
        "geo_ordered_rtc_regions": ["fake"],
        "guild_join_requests": [],
        "session_id": session.id,
        "session_type": "normal",
        "resume_gateway_url": resume_url,
        "application": {"id": str(application_id), "flags": flags},
        "_trace": ["fake-discord"],
    }
    if session.shard is not None:
        ready["shard"] = list(session.shard)
    return ready


def members_chunk(state: GuildState, data: JSONDict) -> JSONDict:
    """The one GUILD_MEMBERS_CHUNK answering REQUEST_GUILD_MEMBERS ``data`` about ``state``'s
    guild: the members asked for by id (the others ``not_found``), or by the start of their
    username, or all; at most ``limit`` of them when it is given."""
    members = list(state.members.values())
    not_found: list[str] = []
    if data.get("user_ids"):
        wanted = [int(u) for u in data["user_ids"]]
        members = [state.members[u] for u in wanted if u in state.members]
        not_found = [str(u) for u in wanted if u not in state.members]
    elif data.get("query"):
        query = str(data["query"]).lower()
        members = [m for m in members if str(m["user"]["username"]).lower().startswith(query)]
    limit = int(data.get("limit") or 0)
    if limit:
        members = members[:limit]
    chunk: JSONDict = {
        "guild_id": str(state.id),
        "members": members,
        "chunk_index": 0,
        "chunk_count": 1,
        "not_found": not_found,
    }
    if data.get("nonce") is not None:
        chunk["nonce"] = data["nonce"]
    if data.get("presences"):
        chunk["presences"] = []
    return chunk


def application_flags(allowed: int) -> int:
    """The application's flags with the privileged intents ``allowed`` it: the "_LIMITED"
    flags, what the portal's toggles set for a bot in < 100 guilds."""
    flags = 1 << 23  # APPLICATION_COMMAND_BADGE
    if allowed & Intents.GUILD_PRESENCES:
        flags |= 1 << 13
    if allowed & Intents.GUILD_MEMBERS:
        flags |= 1 << 15
    if allowed & Intents.MESSAGE_CONTENT:
        flags |= 1 << 19
    return flags
