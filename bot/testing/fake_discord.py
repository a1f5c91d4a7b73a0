"""A fake Discord (REST API + gateway websocket), so Discord bots can be tested offline with
the real discord.py client.

It speaks Discord's wire protocol well enough that ``discord.Client`` and
``app_commands.CommandTree`` run against it unchanged: login, the gateway (HELLO, IDENTIFY,
READY, GUILD_CREATE, heartbeats, RESUME, zlib-stream compression), slash-command sync,
messages, interactions and followups, with Discord's status codes and JSON error bodies
(``{"message", "code", "errors"}``), limits and 429s::

    import asyncio
    import discord
    from adapters.discord.endpoints import use_endpoints, reset_endpoints

    async with FakeDiscord() as fake:                      # or the fake_discord fixture
        guild = fake.guild(1, "Guild")
        general = fake.channel(guild, 10, "general")
        alice = fake.user(42, "alice", "Alice")
        fake.member(guild, alice)

        client = discord.Client(intents=discord.Intents.default())

        @client.event
        async def on_message(message: discord.Message) -> None:
            if client.user in message.mentions:
                await message.reply("Hello!", mention_author=False)

        use_endpoints(fake.api_base, fake.gateway_url)    # point discord.py at the fake
        task = asyncio.create_task(client.start(fake.token))
        await fake.wait_ready()
        fake.message(general, alice, f"<@{fake.application_id}> hi")
        [reply] = await fake.wait_for_message(10)
        assert reply["content"] == "Hello!"
        assert reply["allowed_mentions"]["replied_user"] is False
        await client.close()
        await task
        reset_endpoints()

How discord.py is pointed at it (``adapters.discord.endpoints.use_endpoints``): discord.py 2.7
has no option for other URLs. REST goes to ``discord.http.Route.BASE`` (a ClassVar); the
interaction callbacks and webhook followups of ``discord/webhook/async_.py`` build the same
``Route`` and so follow it (there is no separate webhook base). ``Client.connect`` never asks
``GET /gateway/bot``: it connects to ``DiscordWebSocket.DEFAULT_GATEWAY`` (a class attribute;
also used again after op 9), adding ``?v=10&encoding=json&compress=zlib-stream`` itself, and
RESUMEs on READY's ``resume_gateway_url`` (this fake's own URL). Only ``AutoShardedClient``
calls ``GET /gateway/bot``, which answers ``gateway_url``. Compression cannot be disabled
through Client options, so the fake implements zlib-stream (and zstd-stream when the
``zstandard`` module is installed, else it answers that request with plain text frames).
discord.py retries a 429 only when it has a ``Via`` header (else: "Cloudflare ban",
``HTTPException``); every answer here carries ``Via: 1.1 google`` and ``X-RateLimit-*``.

Acting as Discord and its users: ``guild``, ``role``, ``member``, ``channel``, ``thread``,
``dm``, ``user``, ``set_channel_overwrite``, ``message`` (MESSAGE_CREATE; without the
MESSAGE_CONTENT intent the bot gets ``content`` "" unless mentioned or in a DM; files as
``attachments=[Upload(filename, data, ...)]``), ``voice_message`` (a recorded voice message:
flag IS_VOICE_MESSAGE, one ``audio/ogg`` attachment with ``duration_secs`` and ``waveform``),
``slash``
(INTERACTION_CREATE for a registered command, with the member's resolved ``permissions``),
``click`` (a button on the bot's message), ``dispatch`` (any raw event),
``request_reconnect``, ``invalidate_session``, ``drop_connections``. Failures:
``rate_limit`` (429 as Discord sends it) and ``fail`` (any status/code). Reading back:
``sent``, ``messages(channel_id)``, ``callbacks``, ``followups(id)``, ``original(id)``,
``typing``, ``reactions``, ``deleted``, ``requests``, ``commands(guild_id)``, ``identify``;
waiting: ``wait_ready``, ``wait_for_message``, ``wait_until``, ``wait_idle``.

Attachments: users' files are served by a loopback CDN at the URLs their Attachment objects
carry (``/attachments/<channel>/<id>/<name>?ex=&is=&hm=``, signed like Discord's since 2024;
``proxy_url`` under ``/media``); a tampered or expired link (``cdn.expire()``) answers 404.
Every fetch is in ``cdn.downloads`` (path, status, whether an ``Authorization`` header came).

Sharding: each IDENTIFY with ``shard: [id, count]`` is a session of its own that gets only its
guilds' events (``(guild_id >> 22) % count``; DMs on shard 0); an invalid shard closes 4010, a
session over ``guilds_per_shard`` guilds (Discord: 2500) 4011. Set ``recommended_shards`` and
``max_concurrency`` for ``GET /gateway/bot``; read back ``dispatched`` (which session got which
event), ``events_for(event, id)``, ``shard_sessions((id, count))``; ``wait_ready(shards=...)``.

Several bot applications, as on Discord: ``quiz = fake.add_bot(token, app_id, "Quizzy")``
returns a ``FakeBot`` handle; each token authenticates REST (``@me`` is that bot) and its
own gateway sessions. A bot sees a guild (GUILD_CREATE, its events, its channels over REST)
only once it is a member (``quiz.join(guild, nick=..., roles=..., permissions=...)``; the
first bot joins every ``fake.guild`` by itself), with permissions of its own, its own DMs and
its own application commands. A message one bot posts has it as author and is dispatched to
every session that may see the channel, other bots included (``author.bot`` true; content
hidden from a bot without MESSAGE_CONTENT unless it is mentioned). The API above speaks "as
the bot": the first one, or another inside ``with quiz.acting():`` (``fake.slash``,
``fake.dm``, ``fake.message(..., mentions_bot=True)``, ``fake.sent`` ...); the handle also has
``user``, ``token``, ``application_id``, ``identify``, ``sent()``, ``messages(channel_id)``,
``commands(guild_id)``, ``connected()`` and ``wait_ready()``; ``fake.bots`` lists them all.

Discord rules enforced: ``Authorization: Bot <token>`` (401), 2000 characters (50035),
empty messages (50006), unknown channel/message (10003/10008), one acknowledgement per
interaction (40060), the 3-second callback window (10062), followups only after the
acknowledgement, the first followup after a deferral filling the "thinking" message,
permissions (50001/50013) from roles and overwrites, privileged intents (close 4014 when
``privileged_intents`` does not allow them), command validation on bulk overwrite.

Tips for fast, deterministic tests: ``wait_ready`` means READY and every GUILD_CREATE were
sent; for discord.py's own cache use ``await client.wait_until_ready()`` with
``discord.Client(..., guild_ready_timeout=0.01)`` (it waits 2 s after the last GUILD_CREATE by
default). ``guild.get_member`` needs the members intent (discord.py caches no members
without it). discord.py sleeps 5 s before every IDENTIFY but the first; override
``Client.before_identify_hook`` when testing invalidated sessions. Always ``await
client.close()`` and await the ``client.start`` task before the fake stops. Under
``filterwarnings = error`` on Python < 3.13, import discord inside ``warnings.catch_warnings()``
ignoring "'audioop' is deprecated" (discord.py imports it for voice).

Run standalone with ``python -m bot.testing.fake_discord --port 8090 --token T``; it prints
the API base and gateway URL. ``--bot NAME=TOKEN`` (repeatable) adds a bot application, for a
bot with ``discord.bots``. Its HTTP control API, for tests in another process (a slash
command and ``sent`` are one bot's: ``bot``, its name or id, says which; the first when left
out; a user's message reaches every bot in the channel):

* ``POST /_fake/message`` JSON ``{channel_id, user_id, content, guild_id?, username?}``: a
  user writes (the user, guild, text channel, or a DM channel when no ``guild_id`` is given
  and the channel is unknown, are created on first use; every bot is a member of a new guild).
  Answers the Message. Optional ``attachments``:
  ``[{filename, data (base64), content_type?, width?, height?}]``; or ``voice_message``:
  ``{data (base64), duration_secs?}`` instead of ``content``.
* ``POST /_fake/slash`` JSON ``{channel_id, user_id, name, options?, bot?}``: answers the
  interaction, or 400 ``{"message", "code": 0}`` if the command is not registered.
* ``GET /_fake/sent`` (the bot's messages; ``?bot=NAME``), ``GET /_fake/requests``,
  ``GET /_fake/callbacks`` (every bot's).
"""

# The public path of the kit; the code lives in :mod:`bot.testing.discord`.

from __future__ import annotations

from bot.testing.discord.apps import FakeBot
from bot.testing.discord.cdn import Download, Upload, voice_upload
from bot.testing.discord.server import (
    ROUTES,
    FakeDiscord,
    RecordedRequest,
    main,
)

__all__ = [
    "ROUTES",
    "Download",
    "FakeBot",
    "FakeDiscord",
    "RecordedRequest",
    "Upload",
    "main",
    "voice_upload",
]

if __name__ == "__main__":
    raise SystemExit(main())
