"""discord.py objects -> the platform-neutral ``ChatContext``, and whether the bot is addressed.

A server text channel and each thread are separate chats (a thread is its own conversation);
a DM is a private chat. The member's display name (server nickname, else global name) is who
is speaking. People address the bot by @mention (its user, or the role Discord gives it) or by
replying to one of its messages; DMs always answer; other bots are never answered. Text and
names are cleaned of lone UTF-16 surrogates (:mod:`bot.text`) before the core sees
them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import discord

from bot.context import ChatContext, ChatType
from bot.conversation.triggers import IGNORE, Action, Decision, with_quote
from bot.text import clean_text

PLATFORM = "discord"
ADMIN_PERMISSIONS = discord.Permissions(manage_messages=True)
"""What makes a member a chat admin here (Administrator implies it); admin-only commands'
default permissions. Whether an admin may do something is :mod:`bot.guardrails.admins`' call."""
_SPACES = re.compile(r"[ \t]{2,}")
_TOKEN = re.compile(r"<(@!?|@&|#)(\d+)>")
_USER_TOKEN = re.compile(r"<@!?(\d+)>")  # a user mention written in the text


@dataclass(frozen=True, slots=True)
class Incoming:
    ctx: ChatContext
    text: str  # content with the bot's own mentions removed
    mentioned: bool
    reply_to_bot: bool
    from_bot: bool
    quoted: str | None
    quoted_author: str
    to_others: bool = False  # @mentions someone else: theirs, never a follow-up of our burst


def context_for(
    channel_id: int,
    private: bool,
    user: discord.abc.User,
    *,
    message_id: int | None = None,
    reply_to: int | None = None,
    is_admin: bool = False,
    guild_id: int | None = None,
    parent_id: int | None = None,
    title: str = "",
    platform: str = PLATFORM,
) -> ChatContext:
    """``guild_id`` and a thread's ``parent_id`` go in ``extra``: access lists can name a whole
    server (``discord:guild:<id>``), and a channel's entry covers its threads. ``platform``:
    ``discord``, or ``discord.NAME`` for one of ``discord.bots`` (its chats are its own)."""
    extra = tuple(
        (name, str(value))
        for name, value in (("guild", guild_id), ("parent", parent_id))
        if value is not None
    )
    return ChatContext(
        platform=platform,
        chat_id=str(channel_id),
        chat_type=ChatType.PRIVATE if private else ChatType.GROUP,
        user_id=str(user.id),
        user_name=clean_text(user.display_name),
        message_id=str(message_id) if message_id is not None else None,
        reply_to_message_id=str(reply_to) if reply_to is not None else None,
        is_admin=is_admin,
        extra=extra,
        chat_title=title if not private else clean_text(user.display_name),
    )


def channel_title(guild: discord.Guild | None, channel: object) -> str:
    """``"<guild> #<channel>"`` for a server channel or thread ("" in a DM: the person's name
    is used there)."""
    if guild is None:
        return ""
    name = getattr(channel, "name", None)
    return f"{guild.name} #{name}" if name else guild.name


def normalise(
    message: discord.Message, me: discord.ClientUser, platform: str = PLATFORM
) -> Incoming:
    reference = message.reference
    replied = reference.resolved if reference is not None else None
    replied_message = replied if isinstance(replied, discord.Message) else None
    ctx = context_for(
        message.channel.id,
        message.guild is None,
        message.author,
        message_id=message.id,
        reply_to=reference.message_id if reference is not None else None,
        is_admin=_manages_messages(message),
        guild_id=message.guild.id if message.guild is not None else None,
        parent_id=message.channel.parent_id
        if isinstance(message.channel, discord.Thread)
        else None,
        title=channel_title(message.guild, message.channel),
        platform=platform,
    )
    own_role = message.guild.self_role if message.guild is not None else None
    role_mentioned = own_role is not None and own_role in message.role_mentions
    mentioned = any(user.id == me.id for user in message.mentions) or role_mentioned
    text = message.content
    for token in (f"<@{me.id}>", f"<@!{me.id}>", f"<@&{own_role.id}>" if own_role else None):
        if token:
            text = text.replace(token, " ")
    reply_to_bot = replied_message is not None and replied_message.author.id == me.id
    # written in the text (a reply's ping to its author is not: it is in mentions only)
    others = {int(i) for i in _USER_TOKEN.findall(message.content)} - {me.id}
    other_roles = {r.id for r in message.role_mentions} - ({own_role.id} if own_role else set())
    quoted, author = None, ""
    if replied_message is not None and not reply_to_bot and replied_message.content:
        quoted = clean_text(replied_message.content)
        author = clean_text(replied_message.author.display_name)
    return Incoming(
        ctx=ctx,
        text=clean_text(_SPACES.sub(" ", _readable(text, message)).strip()),
        mentioned=mentioned,
        reply_to_bot=reply_to_bot,
        from_bot=message.author.bot or message.author.id == me.id,
        quoted=quoted,
        quoted_author=author,
        to_others=bool(others or other_roles or message.mention_everyone),
    )


def _manages_messages(message: discord.Message) -> bool:
    """Manage Messages or Administrator in this channel: Discord's own notion of a chat admin."""
    author = message.author
    if message.guild is None or not isinstance(author, discord.Member):
        return False
    return is_chat_admin(message.channel.permissions_for(author))


def is_chat_admin(permissions: discord.Permissions) -> bool:
    """The platform fact the admin policy reads: Manage Messages (or Administrator) here."""
    return permissions >= ADMIN_PERMISSIONS or permissions.administrator


def _readable(text: str, message: discord.Message) -> str:
    """``<@123>``, ``<#456>``, ``<@&789>`` as the names people see, for the model to read."""
    users = {str(u.id): u.display_name for u in message.mentions}
    roles = {str(r.id): r.name for r in message.role_mentions}
    channels = {str(c.id): getattr(c, "name", str(c.id)) for c in message.channel_mentions}

    def name(match: re.Match[str]) -> str:
        kind, ident = match.group(1), match.group(2)
        if kind == "#":
            return f"#{channels.get(ident, ident)}"
        if kind == "@&":
            return f"@{roles.get(ident, 'role')}"
        return f"@{users.get(ident, 'someone')}"

    return _TOKEN.sub(name, text)


def decide(incoming: Incoming, *, mention_trigger: bool, keep_context: bool) -> Decision:
    if incoming.from_bot:
        return IGNORE
    addressed = mention_trigger and (incoming.mentioned or incoming.reply_to_bot)
    if incoming.ctx.is_private or addressed:
        return Decision(
            Action.ANSWER, with_quote(incoming.text, incoming.quoted, incoming.quoted_author)
        )
    # ambient mode may answer it: not a mention or reply the chat's trigger switched off
    unaddressed = bool(incoming.text) and not (incoming.mentioned or incoming.reply_to_bot)
    if keep_context and incoming.text:
        return Decision(Action.OVERHEAR, incoming.text, unaddressed=unaddressed)
    return Decision(Action.IGNORE, unaddressed=unaddressed) if unaddressed else IGNORE


def bot_names(message: discord.Message, me: discord.ClientUser) -> tuple[str, ...]:
    """What people call the bot here without an @: its username, global display name and
    this server's nickname for it (ambient mode, :mod:`bot.conversation.ambient`)."""
    names = [me.name, me.display_name]
    if message.guild is not None:
        names.append(message.guild.me.display_name)
    return tuple(dict.fromkeys(clean_text(n) for n in names if n))
