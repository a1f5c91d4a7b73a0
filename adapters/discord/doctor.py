"""Discord's rows for ``python -m bot doctor``, and the same checks logged when ``run`` starts.

All through discord.py's own REST client (its rate limits and errors):

* the token works (``GET /users/@me``; 401: the token was rejected), and each of
  ``discord.bots``'s (``discord.NAME token``, with its application's intents row);
* the application's privileged intents (``GET /oauth2/applications/@me`` ``flags``): Message
  Content is needed when the bot reads ordinary messages (``mention_trigger``, ``keep_context``);
* in each configured server (``discord.guild_ids``, ``discord:guild:ID`` in ``access.allow`` or
  ``chats:`` presets): the bot is in it, and its server-wide permissions - from the @everyone
  role and the bot member's roles, as Discord computes them - let it read, send (and reply),
  send in threads, embed links and use application commands. (A channel's overwrites can
  still deny them there.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import aiohttp
import discord
from discord.http import HTTPClient

from adapters.discord.endpoints import use_endpoints
from adapters.discord.normalise import PLATFORM
from adapters.discord.settings import DiscordSettings, discord_settings
from bot.config import Settings, safe_url
from bot.doctor import Check, fail, passed, warn
from bot.doctor.targets import named_ids

__all__ = ["configured_guilds", "diagnose", "guild_permissions", "platform_checks"]

# (permission flag, what it is for, needed): a missing needed one fails the row.
# Named as the server settings name them. Needed: to see a channel, post, and reply to a
# message (Discord wants Read Message History for a message_reference). The rest degrade.
REQUIRED: tuple[tuple[str, str, bool], ...] = (
    ("view_channel", "View Channels", True),
    ("send_messages", "Send Messages", True),
    ("read_message_history", "Read Message History", True),
    ("send_messages_in_threads", "Send Messages in Threads", False),
    ("embed_links", "Embed Links", False),
    ("use_application_commands", "Use Application Commands", False),
)
_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)
_INTENTS_FIX = (
    "Developer Portal -> your application -> Bot -> Privileged Gateway Intents: turn on "
    "Message Content Intent (or set discord.mention_trigger and discord.keep_context false)"
)


async def diagnose(settings: Settings) -> list[Check]:
    config = discord_settings(settings)
    use_endpoints(config.api_base, config.gateway_url)  # a one-shot command: process-wide is fine
    rows = await _diagnose_bot(config, PLATFORM, configured_guilds(settings))
    for extra in config.bots:  # discord.bots: each token (and its application) on its own
        rows += await _diagnose_bot(config.for_bot(extra), extra.platform, None)
    return rows


async def _diagnose_bot(
    config: DiscordSettings, label: str, guilds: list[int] | None
) -> list[Check]:
    """One bot's rows: its token, its application's intents, and (``guilds`` given: the main
    bot) its permissions in the configured servers."""
    http = HTTPClient(asyncio.get_running_loop())
    try:
        try:
            me = await http.static_login(config.bot_token)
        except discord.LoginFailure:
            return [
                fail(
                    f"{label} token",
                    "the bot token was rejected by Discord (401 Unauthorized)",
                    "set DISCORD_BOT_TOKEN (or discord.token; discord.bots: its token) to the "
                    "token from the Developer Portal (your application -> Bot -> Reset Token)",
                )
            ]
        except _ERRORS as exc:
            return [
                fail(
                    f"{label} token",
                    f"cannot reach {safe_url(config.api_base)}: {exc}",
                    "check discord.api_base and this host's network",
                )
            ]
        bot_id = int(me["id"])
        token_row = passed(f"{label} token", f"{me['username']} (id {bot_id})")
        if guilds is None:
            return [token_row, await _intents(http, config, label)]
        return [token_row, *await platform_checks(http, bot_id, config, guilds)]
    finally:
        await http.close()


def configured_guilds(settings: Settings) -> list[int]:
    config = discord_settings(settings)
    ids = [*config.guild_ids, *named_ids(settings, "discord:guild:")]
    return list(dict.fromkeys(ids))


async def platform_checks(
    http: HTTPClient, bot_id: int, config: DiscordSettings, guilds: Iterable[int]
) -> list[Check]:
    """Everything after the token: also what ``run`` logs at WARNING when it starts."""
    rows = [await _intents(http, config)]
    for guild_id in guilds:
        rows.append(await _guild(http, bot_id, guild_id))
    return rows


async def _intents(http: HTTPClient, config: DiscordSettings, label: str = PLATFORM) -> Check:
    name = f"{label} intents"
    try:
        app = await http.application_info()
    except _ERRORS as exc:
        return fail(name, f"application info failed: {exc}", "check the token's application")
    flags = discord.ApplicationFlags()
    flags.value = int(app.get("flags") or 0)  # the raw bits, as the API sends them
    content = flags.gateway_message_content or flags.gateway_message_content_limited
    members = flags.gateway_guild_members or flags.gateway_guild_members_limited
    found = f"message content {_on(content)}, server members {_on(members)} (not used)"
    if content or not config.wants_message_content:
        return passed(name, found)
    return fail(
        name,
        f"{found}: without message content the bot cannot read ordinary messages "
        "(group context; only slash commands, @mentions, replies and DMs work)",
        _INTENTS_FIX,
    )


async def _guild(http: HTTPClient, bot_id: int, guild_id: int) -> Check:
    name = f"discord server {guild_id}"
    invite = _invite(bot_id)
    try:
        guild = await http.get_guild(guild_id, with_counts=False)
        member = await http.get_member(guild_id, bot_id)
    except _ERRORS as exc:
        return fail(name, f"the bot is not in it, or cannot see it: {exc}", f"invite it: {invite}")
    permissions = guild_permissions(guild, member, bot_id)
    title = f"{guild.get('name')!r}: " if guild.get("name") else ""
    missing = [(what, needed) for flag, what, needed in REQUIRED if not getattr(permissions, flag)]
    if not missing:
        return passed(name, f"{title}every permission it uses is granted")
    listed = ", ".join(what for what, _ in missing)
    fix = (
        f"give the bot's role these permissions in the server settings ({listed}), or "
        f"re-invite it: {invite}"
    )
    if any(needed for _, needed in missing):
        return fail(name, f"{title}missing permissions: {listed}", fix)
    return warn(name, f"{title}missing permissions: {listed}", fix)


def guild_permissions(guild: Any, member: Any, user_id: int) -> discord.Permissions:
    """Server-wide permissions of a member, as Discord documents it: the owner has all; else
    @everyone's (the role whose id is the guild's) OR each of its roles'; ADMINISTRATOR: all."""
    if str(guild.get("owner_id")) == str(user_id):
        return discord.Permissions.all()
    roles = {str(role["id"]): int(role["permissions"]) for role in guild.get("roles", [])}
    value = roles.get(str(guild["id"]), 0)
    for role_id in member.get("roles", []):
        value |= roles.get(str(role_id), 0)
    permissions = discord.Permissions(value)
    return discord.Permissions.all() if permissions.administrator else permissions


def _invite(application_id: int) -> str:
    value = 0
    for flag, _, _ in REQUIRED:
        value |= getattr(discord.Permissions, flag).flag
    return (
        f"https://discord.com/oauth2/authorize?client_id={application_id}"
        f"&scope=bot+applications.commands&permissions={value}"
    )


def _on(value: bool) -> str:
    return "on" if value else "off"
