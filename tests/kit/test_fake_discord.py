"""The fake Discord, driven by the real discord.py client: its answers must parse as in prod.

Each test starts a real ``discord.Client`` (``client.start``, never ``run``) pointed at the fake
with ``adapters.discord.endpoints.use_endpoints``; raw aiohttp requests pin the wire details
discord.py hides (error bodies, headers, auth) and the HTTP control API.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

with warnings.catch_warnings():
    # discord.py imports the stdlib audioop (voice only), deprecated since Python 3.11.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    from discord import app_commands

from adapters.discord.endpoints import (
    DISCORD_API_BASE,
    current_endpoints,
    reset_endpoints,
    use_endpoints,
)
from bot.testing.fake_discord import FakeDiscord

ROOT = Path(__file__).resolve().parents[2]  # tests/kit/ -> the project
JSONDict = dict[str, Any]
GUILD, GENERAL, ALICE, BOB, MOD_ROLE = 1, 10, 42, 43, 5


@pytest.fixture(autouse=True)
def _restore_endpoints() -> Any:
    yield
    reset_endpoints()


def world(fake: FakeDiscord) -> tuple[JSONDict, JSONDict, JSONDict, JSONDict]:
    """A guild with #general, Alice (a moderator) and Bob (no roles)."""
    guild = fake.guild(GUILD, "Parlour HQ")
    general = fake.channel(guild, GENERAL, "general")
    fake.role(guild, MOD_ROLE, "mods", discord.Permissions(manage_messages=True).value)
    alice = fake.user(ALICE, "alice", "Alice")
    bob = fake.user(BOB, "bob")
    fake.member(guild, alice, roles=[MOD_ROLE])
    fake.member(guild, bob)
    return guild, general, alice, bob


def intents(*, content: bool = True, members: bool = True) -> discord.Intents:
    chosen = discord.Intents.default()
    chosen.message_content = content
    chosen.members = members
    return chosen


@asynccontextmanager
async def running(
    fake: FakeDiscord,
    client: discord.Client,
    setup: Callable[[], Any] | None = None,
) -> AsyncIterator[discord.Client]:
    """Start the client against the fake, wait until discord.py is ready, always close it."""
    use_endpoints(fake.api_base, fake.gateway_url)
    task = asyncio.create_task(client.start(fake.token))
    try:
        await fake.wait_ready()
        await asyncio.wait_for(client.wait_until_ready(), 5)
        yield client
    finally:
        await client.close()
        await asyncio.wait_for(task, 5)


def make_client(**options: Any) -> discord.Client:
    options.setdefault("intents", intents())
    return discord.Client(guild_ready_timeout=0.01, **options)


# --------------------------------------------------------------------------- gateway


async def test_connects_with_ready_guild_create_and_zlib_stream(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    thread = fake.thread(fake.channel(fake.guild(2, "Other"), 20, "lobby"), 21, "a thread")
    async with running(fake, make_client()) as client:
        guild = client.get_guild(GUILD)
        assert guild is not None and guild.name == "Parlour HQ"
        alice = guild.get_member(ALICE)
        assert alice is not None and alice.display_name == "Alice"
        assert [r.name for r in alice.roles] == ["@everyone", "mods"]
        assert guild.me is not None and guild.me.id == fake.application_id
        assert client.user is not None and client.user.id == fake.application_id
        assert client.application_id == fake.application_id
        assert isinstance(client.get_channel(GENERAL), discord.TextChannel)
        assert isinstance(client.get_channel(int(thread["id"])), discord.Thread)
        assert fake.identify is not None
        assert fake.identify["intents"] == intents().value
        [session] = fake.sessions.values()
        assert session.connection is not None and session.connection.compress == "zlib-stream"
        # Added while connected: dispatched as Discord does.
        fake.channel(fake.guild(3, "Later"), 30, "late")
        await _until(lambda: client.get_channel(30) is not None)
        assert client.get_guild(3) is not None


async def test_dropped_connection_resumes_and_replays_missed_events(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    seen: list[str] = []
    resumed = asyncio.Event()
    client = make_client()
    client.event(_collect(seen))

    @client.event
    async def on_resumed() -> None:
        resumed.set()

    async with running(fake, client):
        [session] = fake.sessions.values()
        fake.drop_connections(4000)
        fake.message(general, alice, "while away")  # sent after the close: replayed on RESUME
        await asyncio.wait_for(resumed.wait(), 5)
        fake.request_reconnect()  # op 7: the client closes and RESUMEs again
        fake.message(general, alice, "after")
        await _until(lambda: seen == ["while away", "after"])
        assert list(fake.sessions.values()) == [session]
        assert [p["t"] for p in session.log].count("RESUMED") == 2


async def test_invalidated_session_identifies_again(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    connects: list[int] = []

    class QuickClient(discord.Client):
        async def before_identify_hook(
            self, shard_id: int | None, *, initial: bool = False
        ) -> None:
            """discord.py sleeps 5 s before every IDENTIFY but the first one."""

    client = QuickClient(intents=intents(), guild_ready_timeout=0.01)

    @client.event
    async def on_connect() -> None:
        connects.append(len(fake.sessions))

    async with running(fake, client):
        [first] = fake.sessions
        fake.invalidate_session()
        await _until(lambda: len(connects) == 2)
        assert list(fake.sessions) != [first] and len(fake.sessions) == 1


async def test_privileged_intent_refused_raises_privileged_intents_required() -> None:
    async with FakeDiscord(privileged_intents=False) as fake:
        use_endpoints(fake.api_base, fake.gateway_url)
        client = make_client()
        try:
            with pytest.raises(discord.PrivilegedIntentsRequired):
                await asyncio.wait_for(client.start(fake.token), 5)
        finally:
            await client.close()
        assert fake.identify is None and not fake.sessions


async def test_wrong_token_is_a_login_failure(fake_discord: FakeDiscord) -> None:
    use_endpoints(fake_discord.api_base, fake_discord.gateway_url)
    client = make_client()
    try:
        with pytest.raises(discord.LoginFailure):
            await client.start("not-the-token")
    finally:
        await client.close()
    assert fake_discord.requests[0].status == 401


# -------------------------------------------------------------------------- messages


def _collect(into: list[str]) -> Callable[[discord.Message], Any]:
    async def on_message(message: discord.Message) -> None:
        into.append(message.content)

    return on_message


async def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:  # noqa: ASYNC109
    """Poll a condition on the client's side (the fake's own waits cover its side)."""
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {timeout}s")


async def test_on_message_gets_author_member_and_mentions(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, bob = world(fake)
    received: asyncio.Queue[discord.Message] = asyncio.Queue()
    client = make_client()

    @client.event
    async def on_message(message: discord.Message) -> None:
        await received.put(message)

    async with running(fake, client):
        sent = fake.message(general, alice, f"hi <@{fake.application_id}> and <@{BOB}>")
        message = await asyncio.wait_for(received.get(), 5)
        assert message.id == int(sent["id"]) and message.content == sent["content"]
        assert isinstance(message.author, discord.Member)
        assert message.author.id == ALICE and message.author.nick is None
        assert [u.id for u in message.mentions] == [fake.application_id, BOB]
        assert client.user is not None and client.user.mentioned_in(message)
        reply = await message.reply("hello", mention_author=False)
        echo = await asyncio.wait_for(received.get(), 5)  # Discord echoes the bot's own message
        assert echo.author.id == fake.application_id and echo.id == reply.id
        [mine] = fake.messages(GENERAL)
        assert mine["message_reference"]["message_id"] == sent["id"]
        assert mine["allowed_mentions"] == {
            "parse": ["everyone", "users", "roles"],
            "replied_user": False,
        }
        assert mine["mentions"] == []
        answer = fake.message(general, bob, "thanks", reply_to=mine)
        replied = await asyncio.wait_for(received.get(), 5)
        assert replied.reference is not None and replied.reference.message_id == reply.id
        assert [u.id for u in replied.mentions] == [fake.application_id]
        assert answer["type"] == 19


async def test_message_content_needs_the_intent_unless_mentioned_or_dm(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    seen: list[str] = []
    client = make_client(intents=intents(content=False, members=False))
    client.event(_collect(seen))
    async with running(fake, client):
        fake.message(general, alice, "just chatting")
        fake.message(general, alice, f"<@{fake.application_id}> you there?")
        fake.message(fake.dm(alice), alice, "a private word")
        await _until(lambda: len(seen) == 3)
    assert seen == ["", f"<@{fake.application_id}> you there?", "a private word"]


async def test_send_records_allowed_mentions_and_limits(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    async with running(fake, make_client()) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        await channel.send(f"hey <@{ALICE}>", allowed_mentions=discord.AllowedMentions.none())
        [record] = fake.sent
        assert record["allowed_mentions"] == {"parse": []}
        assert record["channel_id"] == str(GENERAL) and record["mentions"] == []
        assert record["message_reference"] is None and record["flags"] == 0
        with pytest.raises(discord.HTTPException) as too_long:
            await channel.send("x" * 2001)
        assert too_long.value.status == 400 and too_long.value.code == 50035
        assert "Must be 2000 or fewer in length." in too_long.value.text
        with pytest.raises(discord.HTTPException) as empty:
            await channel.send(embeds=[])
        assert empty.value.code == 50006 and empty.value.text == "Cannot send an empty message"
        await channel.send("x" * 2000)
        assert len(fake.messages(GENERAL)) == 2


async def test_edit_delete_typing_and_unknowns(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    async with running(fake, make_client()) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        async with channel.typing():
            message = await channel.send("draft")
        edited = await message.edit(content="final")
        assert edited.content == "final" and edited.edited_at is not None
        assert fake.sent[0]["content"] == "final"
        assert [c for c, _ in fake.typing] == [GENERAL]
        with pytest.raises(discord.NotFound) as missing:
            await channel.get_partial_message(12345).edit(content="nope")
        assert missing.value.code == 10008
        theirs = fake.message(general, alice, "mine")
        with pytest.raises(discord.Forbidden) as forbidden:
            await channel.get_partial_message(int(theirs["id"])).edit(content="hijack")
        assert forbidden.value.code == 50005
        fetched = await channel.fetch_message(int(theirs["id"]))
        assert fetched.content == "mine" and fetched.author.id == ALICE
        await message.delete()
        assert fake.messages(GENERAL) == [] and fake.deleted == [(GENERAL, message.id)]
        with pytest.raises(discord.NotFound) as unknown_channel:
            await client.http.send_message(999, params=discord.http.handle_message_parameters("x"))
        assert unknown_channel.value.code == 10003


async def test_missing_permissions_are_403(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    guild, general, _, _ = world(fake)
    quiet = fake.channel(guild, 11, "read-only")
    fake.set_channel_overwrite(quiet, GUILD, deny=discord.Permissions(send_messages=True).value)
    hidden = fake.channel(guild, 12, "staff")
    fake.set_channel_overwrite(hidden, GUILD, deny=discord.Permissions(view_channel=True).value)
    async with running(fake, make_client()) as client:
        read_only = client.get_channel(11)
        assert isinstance(read_only, discord.TextChannel)
        assert not read_only.permissions_for(read_only.guild.me).send_messages
        with pytest.raises(discord.Forbidden) as cannot_send:
            await read_only.send("hello?")
        assert cannot_send.value.code == 50013
        with pytest.raises(discord.Forbidden) as cannot_see:
            await client.http.send_message(12, params=discord.http.handle_message_parameters("x"))
        assert cannot_see.value.code == 50001
    assert general["permission_overwrites"] == []


async def test_429_with_via_is_retried_transparently(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    async with running(fake, make_client()) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        fake.rate_limit("send_message", retry_after=0.2)
        message = await channel.send("eventually")
        assert message.content == "eventually"
        posts = [r for r in fake.requests if r.route == "POST /channels/{channel_id}/messages"]
        assert [r.status for r in posts] == [429, 200]
        assert posts[1].at - posts[0].at >= 0.19
        assert [m["content"] for m in fake.sent] == ["eventually"]


async def test_rate_limit_wire_format(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    fake.rate_limit("POST /channels/{channel_id}/messages", retry_after=1.5)
    fake.rate_limit("/users/@me", retry_after=0.25, global_=True)
    headers = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        url = f"{fake.api_base}/channels/{GENERAL}/messages"
        async with http.post(url, json={"content": "x"}) as response:
            assert response.status == 429
            assert response.headers["Content-Type"] == "application/json"
            assert response.headers["Via"] == "1.1 google"
            assert response.headers["Retry-After"] == "2"
            assert response.headers["X-RateLimit-Scope"] == "user"
            assert response.headers["X-RateLimit-Remaining"] == "0"
            assert response.headers["X-RateLimit-Reset-After"] == "1.500"
            assert (
                "X-RateLimit-Bucket" in response.headers and "X-RateLimit-Limit" in response.headers
            )
            assert await response.json() == {
                "message": "You are being rate limited.",
                "retry_after": 1.5,
                "global": False,
            }
        async with http.get(f"{fake.api_base}/users/@me") as response:
            body = await response.json()
            assert response.status == 429 and body["global"] is True
            assert response.headers["X-RateLimit-Global"] == "true"
        async with http.post(url, json={"content": "now"}) as response:
            assert response.status == 200
            assert int(response.headers["X-RateLimit-Remaining"]) >= 0
            assert response.headers["Via"] == "1.1 google"


async def test_http_errors_auth_and_unknown_routes(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    world(fake)
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{fake.api_base}/users/@me") as response:
            assert response.status == 401
            assert response.headers["Content-Type"] == "application/json"
            assert await response.json() == {"message": "401: Unauthorized", "code": 0}
        auth = {"Authorization": f"Bot {fake.token}"}
        async with http.get(f"{fake.api_base}/nope", headers=auth) as response:
            assert response.status == 404
            assert await response.json() == {"message": "404: Not Found", "code": 0}
        async with http.post(
            f"{fake.api_base}/channels/{GENERAL}/messages", data=b"{", headers=auth
        ) as response:
            assert (await response.json())["code"] == 50109
        async with http.get(f"{fake.api_base}/gateway") as response:
            assert await response.json() == {"url": fake.gateway_url}
        async with http.get(f"{fake.api_base}/gateway/bot", headers=auth) as response:
            assert (await response.json())["shards"] == 1
        async with http.get(f"{fake.api_base}/guilds/{GUILD}/members/{ALICE}", headers=auth) as r:
            member = await r.json()
            assert member["user"]["id"] == str(ALICE) and member["roles"] == [str(MOD_ROLE)]
            assert member["flags"] == 0 and "joined_at" in member
        async with http.get(f"{fake.api_base}/guilds/{GUILD}/members/7", headers=auth) as response:
            assert (await response.json())["code"] == 10007


# ----------------------------------------------------------------------- interactions


def slash_client(
    calls: list[discord.Interaction],
) -> tuple[discord.Client, app_commands.CommandTree]:
    client = make_client()
    tree = app_commands.CommandTree(client)

    @tree.command(name="ask", description="Ask the bot", guild=discord.Object(GUILD))
    @app_commands.describe(question="What to ask")
    async def ask(interaction: discord.Interaction, question: str) -> None:
        calls.append(interaction)
        await interaction.response.defer()
        await interaction.followup.send(f"thinking about {question}")
        await interaction.followup.send("and more", ephemeral=True)

    return client, tree


async def test_slash_command_sync_defer_and_followups(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, bob = world(fake)
    calls: list[discord.Interaction] = []
    client, tree = slash_client(calls)
    async with running(fake, client):
        synced = await tree.sync(guild=discord.Object(GUILD))
        assert [c.name for c in synced] == ["ask"] and synced[0].guild_id == GUILD
        [command] = fake.commands(GUILD)
        assert command["options"][0]["name"] == "question" and fake.commands() == []
        asked = fake.slash(general, alice, "ask", {"question": "tea?"})
        interaction_id = int(asked["id"])
        await fake.wait_until(lambda: len(fake.followups(interaction_id)) == 2)
        [interaction] = calls
        assert interaction.permissions.manage_messages is True
        assert interaction.user.id == ALICE and interaction.channel_id == GENERAL
        assert [c["type"] for c in fake.callbacks] == [5]
        first, second = fake.followups(interaction_id)
        assert fake.original(interaction_id) == first  # the first followup fills "thinking..."
        assert first["content"] == "thinking about tea?" and first["flags"] == 0
        assert second["flags"] == 64 and second["interaction_id"] == str(interaction_id)
        assert [m["content"] for m in fake.messages(GENERAL)] == [first["content"], "and more"]
        fake.slash(general, bob, "ask", {"question": "why?"})
        await _until(lambda: len(calls) == 2)
        assert calls[1].permissions.manage_messages is False
        assert calls[1].app_permissions.send_messages is True
        with pytest.raises(ValueError, match="not registered"):
            fake.slash(general, alice, "unknown")
        with pytest.raises(ValueError, match="required option"):
            fake.slash(general, alice, "ask")


async def test_double_acknowledge_and_late_callback(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    errors: list[discord.HTTPException] = []
    client = make_client()
    tree = app_commands.CommandTree(client)

    @tree.command(name="twice", description="Answers twice", guild=discord.Object(GUILD))
    async def twice(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("first")
        route = discord.http.Route(
            "POST",
            "/interactions/{interaction_id}/{interaction_token}/callback",
            interaction_id=interaction.id,
            interaction_token=interaction.token,
        )
        try:
            await client.http.request(route, json={"type": 4, "data": {"content": "again"}})
        except discord.HTTPException as exc:
            errors.append(exc)

    @tree.command(name="slow", description="Answers late", guild=discord.Object(GUILD))
    async def slow(interaction: discord.Interaction) -> None:
        await asyncio.sleep(0.15)
        try:
            await interaction.response.send_message("too late")
        except discord.HTTPException as exc:
            errors.append(exc)

    async with running(fake, client):
        await tree.sync(guild=discord.Object(GUILD))
        fake.slash(general, alice, "twice")
        await _until(lambda: len(errors) == 1)
        assert errors[0].status == 400 and errors[0].code == 40060
        fake.interaction_timeout = 0.1
        fake.slash(general, alice, "slow")
        await _until(lambda: len(errors) == 2)
        assert isinstance(errors[1], discord.NotFound) and errors[1].code == 10062
        assert [m["content"] for m in fake.sent] == ["first"]
        assert fake.sent[0]["type"] == 20


class Buttons(discord.ui.View):
    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.button(label="Done", custom_id="done")
    async def done(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await interaction.response.edit_message(content="done!", view=None)

    @discord.ui.button(label="Later", custom_id="later")
    async def later(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await interaction.response.defer()
        await interaction.edit_original_response(content="later!")


async def test_global_commands_in_dms_and_buttons_with_a_sharded_client(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    users: list[discord.User | discord.Member] = []
    client = discord.AutoShardedClient(intents=intents(), guild_ready_timeout=0.01)
    tree = app_commands.CommandTree(client)

    @tree.command(name="menu", description="Show buttons")
    async def menu(interaction: discord.Interaction, who: discord.User) -> None:
        users.append(who)
        await interaction.response.send_message(f"for {who.mention}", view=Buttons())

    async with running(fake, client):
        await tree.sync()
        assert [c["name"] for c in fake.commands()] == ["menu"]
        assert any(r.route == "GET /gateway/bot" for r in fake.requests)  # sharded: asks first
        dm = fake.slash(fake.dm(alice), alice, "menu", {"who": alice})
        await fake.wait_until(lambda: len(fake.callbacks) == 1)
        assert isinstance(users[0], discord.User) and users[0].id == ALICE
        assert "user" in dm and "member" not in dm and dm["context"] == 1
        asked = fake.slash(general, alice, "menu", {"who": BOB})
        await fake.wait_until(lambda: len(fake.callbacks) == 2)
        assert isinstance(users[1], discord.Member) and users[1].id == BOB
        shown = fake.original(int(asked["id"]))
        assert shown is not None and shown["components"][0]["components"][0]["custom_id"] == "done"
        fake.click(shown, alice, "later")
        await fake.wait_until(lambda: fake.callbacks[-1]["type"] == 6)
        await fake.wait_until(lambda: fake.messages(GENERAL)[-1]["content"] == "later!")
        fake.click(shown, alice, "done")
        await fake.wait_until(lambda: fake.messages(GENERAL)[-1]["content"] == "done!")
        assert [c["type"] for c in fake.callbacks] == [4, 4, 6, 7]
        assert fake.messages(GENERAL)[-1]["components"] == []


async def test_followup_before_acknowledging_is_unknown_webhook(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    async with aiohttp.ClientSession() as http:
        url = f"{fake.api_base}/applications/{fake.application_id}/guilds/{GUILD}/commands"
        auth = {"Authorization": f"Bot {fake.token}"}
        bad = [{"name": "Bad Name", "description": ""}]
        async with http.put(url, json=bad, headers=auth) as response:
            body = await response.json()
            assert response.status == 400 and body["code"] == 50035
            assert (
                body["errors"]["0"]["name"]["_errors"][0]["code"]
                == "APPLICATION_COMMAND_INVALID_NAME"
            )
            assert (
                body["errors"]["0"]["description"]["_errors"][0]["code"] == "BASE_TYPE_BAD_LENGTH"
            )
        good = [{"name": "hi", "description": "Say hi", "type": 1}]
        async with http.put(url, json=good, headers=auth) as response:
            assert response.status == 200
        interaction = fake.slash(general, alice, "hi")
        hook = f"{fake.api_base}/webhooks/{fake.application_id}/{interaction['token']}"
        async with http.post(hook, json={"content": "early"}) as response:
            assert response.status == 404 and (await response.json())["code"] == 10015
        callback = (
            f"{fake.api_base}/interactions/{interaction['id']}/{interaction['token']}/callback"
        )
        async with http.post(callback, json={"type": 4, "data": {"content": "hi!"}}) as response:
            assert response.status == 204
        async with http.post(f"{hook}?wait=true", json={"content": "later"}) as response:
            assert (await response.json())["content"] == "later"
        async with http.patch(f"{hook}/messages/@original", json={"content": "hi again"}) as r:
            assert (await r.json())["content"] == "hi again"
    original = fake.original(int(interaction["id"]))
    assert original is not None and original["content"] == "hi again"


# ----------------------------------------------------------------- control API, CLI


async def test_http_control_api(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    async with aiohttp.ClientSession() as http:
        base = fake.api_base.removesuffix("/api/v10")
        payload = {"channel_id": 77, "user_id": 5, "content": "hello", "guild_id": 7}
        async with http.post(f"{base}/_fake/message", json=payload) as response:
            message = await response.json()
            assert message["content"] == "hello" and message["author"]["id"] == "5"
        async with http.post(
            f"{base}/_fake/slash", json={"channel_id": 77, "user_id": 5, "name": "x"}
        ) as r:
            assert r.status == 400 and "not registered" in (await r.json())["message"]
        async with http.get(f"{base}/_fake/sent") as response:
            assert await response.json() == []
    assert fake.guild_state(7).members.keys() == {fake.application_id, 5}


async def test_http_control_api_names_the_bot_of_several(fake_discord: FakeDiscord) -> None:
    """With ``discord.bots`` (``--bot`` on the command line) a control request may name the
    bot: a guild made by a message has them all; a slash command is the named bot's."""
    fake = fake_discord
    quiz = fake.add_bot("quiz-token.abc.def", fake.application_id + 1, "quiz")
    async with aiohttp.ClientSession() as http:
        base = fake.api_base.removesuffix("/api/v10")
        payload = {"channel_id": 77, "user_id": 5, "content": "hello", "guild_id": 7}
        async with http.post(f"{base}/_fake/message", json=payload) as response:
            assert response.status == 200
        commands = f"{fake.api_base}/applications/{quiz.application_id}/commands"
        hi = [{"name": "hi", "description": "Say hi", "type": 1}]
        auth = {"Authorization": f"Bot {quiz.token}"}
        async with http.put(commands, json=hi, headers=auth) as response:
            assert response.status == 200
        slash = {"channel_id": 77, "user_id": 5, "name": "hi"}
        async with http.post(f"{base}/_fake/slash", json=slash) as r:  # the first bot's: none
            said = (await r.json())["message"]
            assert r.status == 400 and "/hi is not registered in guild 7 or globally by " in said
        async with http.post(f"{base}/_fake/slash", json={"user_id": 5, "name": "hi"}) as r:
            said = (await r.json())["message"]
            assert said == "expected JSON with channel_id, user_id, name: no 'channel_id'"
        dm = {"channel_id": 900, "user_id": 5, "content": "psst"}
        async with http.post(f"{base}/_fake/message", json=dm) as response:
            assert response.status == 200
        async with http.post(f"{base}/_fake/message", json={**dm, "channel_id": 901}) as r:
            assert r.status == 400 and "DM channel is 900, not 901" in (await r.json())["message"]
        async with http.post(f"{base}/_fake/slash", json={**slash, "bot": "quiz"}) as r:
            assert (await r.json())["application_id"] == str(quiz.application_id)
        async with http.post(f"{base}/_fake/slash", json={**slash, "bot": "nobody"}) as r:
            assert r.status == 400 and "no bot named 'nobody'" in (await r.json())["message"]
        async with http.get(f"{base}/_fake/sent", params={"bot": "quiz"}) as response:
            assert await response.json() == []
        async with http.get(f"{base}/_fake/sent", params={"bot": "nobody"}) as response:
            assert response.status == 400
    assert fake.guild_state(7).members.keys() == {fake.application_id, quiz.application_id, 5}


async def test_module_docstring_example_runs() -> None:
    import bot.testing.fake_discord as module

    doc = module.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    source = "async def example():\n" + "\n".join(f"    {line[4:]}" for line in block.splitlines())
    namespace: dict[str, Any] = {"asyncio": asyncio, "FakeDiscord": FakeDiscord}
    exec(compile(source, "fake_discord docstring", "exec"), namespace)
    await asyncio.wait_for(namespace["example"](), 10)


def test_use_endpoints_sets_and_resets() -> None:
    use_endpoints("http://127.0.0.1:9/api/v10/", "ws://127.0.0.1:9/gateway?x=1")
    assert current_endpoints() == ("http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9/gateway")
    use_endpoints("http://127.0.0.1:9/api/v10", None)  # idempotent, gateway untouched
    assert current_endpoints()[1] == "ws://127.0.0.1:9/gateway"
    with pytest.raises(ValueError):
        use_endpoints("ftp://x/api", None)
    with pytest.raises(ValueError):
        use_endpoints("http://x/api", "http://not-a-websocket")
    reset_endpoints()
    assert current_endpoints() == (DISCORD_API_BASE, "wss://gateway.discord.gg/")


@pytest.mark.slow
async def test_cli_serves_until_sigterm() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.testing.fake_discord",
        "--port",
        "0",
        "--token",
        "cli-token",
        "--bot",
        "quiz=quiz-cli-token",
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert line.startswith("DISCORD_API_BASE=http://127.0.0.1:")
        base = line.partition("=")[2]
        headers = {"Authorization": "Bot cli-token"}
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/users/@me", headers=headers) as r:
                assert (await r.json())["bot"] is True
            quiz = {"Authorization": "Bot quiz-cli-token"}  # --bot: a second application
            async with http.get(f"{base}/users/@me", headers=quiz) as r:
                assert (await r.json())["username"] == "quiz"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 10) == 0
