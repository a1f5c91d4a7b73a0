"""One fake Discord hosting several bot applications (``FakeDiscord.add_bot``), driven by real
discord.py clients, one per token: who each bot is, what each sees, what each may do."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import aiohttp
import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    from discord import app_commands

from adapters.discord.endpoints import reset_endpoints, use_endpoints
from bot.testing.fake_discord import FakeBot, FakeDiscord

GUILD, GENERAL, OTHER, LOBBY, ALICE = 1, 10, 2, 20, 42
QUIZ_TOKEN, QUIZ_ID = "quiz-token.abc.def", 1_300_000_000_000_000_001


@pytest.fixture(autouse=True)
def _restore_endpoints() -> Any:
    yield
    reset_endpoints()


class Recording(discord.Client):
    """A client that keeps every message it is given."""

    def __init__(self, *, content: bool = True) -> None:
        intents = discord.Intents.default()
        intents.message_content = content
        super().__init__(intents=intents, guild_ready_timeout=0.01)
        self.seen: list[discord.Message] = []
        self.interactions: list[discord.Interaction] = []

    async def on_message(self, message: discord.Message) -> None:
        self.seen.append(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        self.interactions.append(interaction)


@asynccontextmanager
async def started(fake: FakeDiscord, *clients: tuple[str, discord.Client]) -> AsyncIterator[None]:
    """Start each client with its token, all against the one fake; always close them."""
    use_endpoints(fake.api_base, fake.gateway_url)
    async with AsyncExitStack() as stack:
        for token, client in clients:
            task = asyncio.create_task(client.start(token))

            async def close(c: discord.Client = client, t: asyncio.Task[None] = task) -> None:
                await c.close()
                await asyncio.wait_for(t, 5)

            stack.push_async_callback(close)
            await asyncio.wait_for(client.wait_until_ready(), 5)
        yield


def two_bots(fake: FakeDiscord) -> tuple[FakeBot, dict[str, Any], dict[str, Any]]:
    """Guild 1 with both bots in #general and Alice; guild 2 with the first bot only."""
    quiz = fake.add_bot(QUIZ_TOKEN, QUIZ_ID, "Quizzy")
    guild = fake.guild(GUILD, "Parlour HQ")
    general = fake.channel(guild, GENERAL, "general")
    fake.channel(fake.guild(OTHER, "Elsewhere"), LOBBY, "lobby")
    quiz.join(guild, nick="Quiz master")
    alice = fake.user(ALICE, "alice", "Alice")
    fake.member(guild, alice)
    return quiz, guild, general


async def _until(predicate: Any, timeout: float = 5.0) -> None:  # noqa: ASYNC109
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {timeout}s")


async def test_each_token_is_its_own_bot_in_the_guilds_it_joined(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    quiz, _, _ = two_bots(fake)
    main, other = Recording(), Recording()
    async with started(fake, (fake.token, main), (QUIZ_TOKEN, other)):
        assert main.user is not None and main.user.id == fake.application_id
        assert other.user is not None and other.user.id == QUIZ_ID
        assert other.user.display_name == "Quizzy" and other.user.bot
        assert {g.id for g in main.guilds} == {GUILD, OTHER}
        assert [g.id for g in other.guilds] == [GUILD]  # never invited to the other guild
        guild = other.get_guild(GUILD)
        assert guild is not None and guild.me.display_name == "Quiz master"
        assert quiz.identify is not None and quiz.identify["token"] == QUIZ_TOKEN
        assert quiz.connected()
        async with aiohttp.ClientSession() as http:
            for token, expected in ((QUIZ_TOKEN, 200), ("nobody's", 401)):
                async with http.get(
                    f"{fake.api_base}/users/@me", headers={"Authorization": f"Bot {token}"}
                ) as answer:
                    assert answer.status == expected
                    if expected == 200:
                        assert (await answer.json())["id"] == str(QUIZ_ID)
            async with http.get(
                f"{fake.api_base}/channels/{LOBBY}",
                headers={"Authorization": f"Bot {QUIZ_TOKEN}"},
            ) as answer:
                assert answer.status == 403  # not a member there: Missing Access
        # invited while connected: the guild arrives as on Discord
        quiz.join(fake.guild_state(OTHER).guild)
        await _until(lambda: other.get_guild(OTHER) is not None)


async def test_a_bots_message_reaches_the_other_bot_as_a_bot_message(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    quiz, _, _ = two_bots(fake)
    main, other = Recording(), Recording(content=False)  # quiz without MESSAGE_CONTENT
    async with started(fake, (fake.token, main), (QUIZ_TOKEN, other)):
        channel = main.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        await channel.send("plain words")
        await channel.send(f"<@{QUIZ_ID}> your turn")
        await _until(lambda: len(other.seen) == 2 and len(main.seen) == 2)
        plain, mention = other.seen
        assert plain.author.id == fake.application_id and plain.author.bot
        assert plain.content == ""  # no content intent, not mentioned: hidden as on Discord
        assert mention.content == f"<@{QUIZ_ID}> your turn"
        assert [m.content for m in main.seen] == ["plain words", f"<@{QUIZ_ID}> your turn"]
        quiz_channel = other.get_channel(GENERAL)
        assert isinstance(quiz_channel, discord.TextChannel)
        sent = await quiz_channel.send("quiz answer")
        assert sent.author.id == QUIZ_ID
        await _until(lambda: len(main.seen) == 3)
        assert main.seen[-1].author.id == QUIZ_ID and main.seen[-1].author.bot
    assert [m["content"] for m in quiz.messages(GENERAL)] == ["quiz answer"]
    assert [m["content"] for m in fake.messages(GENERAL)][:1] == ["plain words"]
    assert len(fake.messages(GENERAL)) == 2  # the first bot's own


async def test_permissions_commands_interactions_and_dms_are_each_bots_own(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    quiz, _, general = two_bots(fake)
    fake.set_channel_overwrite(
        general, QUIZ_ID, deny=discord.Permissions(send_messages=True).value, member=True
    )
    main, other = Recording(), Recording()
    trees = {id(c): app_commands.CommandTree(c) for c in (main, other)}

    @app_commands.command(name="quiz", description="start a quiz")
    async def quiz_command(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("Round one!")

    trees[id(other)].add_command(quiz_command, guild=discord.Object(GUILD))
    alice = fake.users[ALICE]
    async with started(fake, (fake.token, main), (QUIZ_TOKEN, other)):
        await trees[id(other)].sync(guild=discord.Object(GUILD))
        await trees[id(main)].sync(guild=discord.Object(GUILD))
        assert [c["name"] for c in quiz.commands(GUILD)] == ["quiz"]
        assert fake.commands(GUILD) == []  # the first application's, empty
        with pytest.raises(ValueError):
            fake.slash(general, alice, "quiz")  # not a command of the first bot
        with quiz.acting():
            payload = fake.slash(general, alice, "quiz")
        assert payload["application_id"] == str(QUIZ_ID)
        await fake.wait_until(lambda: bool(quiz.sent()))  # its tree answered
        assert len(other.interactions) == 1
        assert not main.interactions  # never the other application's
        [answer] = quiz.sent()
        assert answer["author"]["id"] == str(QUIZ_ID) and answer["content"] == "Round one!"
        channel = other.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.Forbidden):
            await channel.send("denied here")  # its overwrite, not the first bot's
        main_channel = main.get_channel(GENERAL)
        assert isinstance(main_channel, discord.TextChannel)
        await main_channel.send("allowed")
        main_dm, quiz_dm = fake.dm(alice), None
        with quiz.acting():
            quiz_dm = fake.dm(alice)
            fake.message(quiz_dm, alice, "hello quiz")
        assert quiz_dm["id"] != main_dm["id"]
        await _until(lambda: any(m.content == "hello quiz" for m in other.seen))
        assert not any(m.content == "hello quiz" for m in main.seen)


def test_a_second_application_needs_an_id_and_token_of_its_own(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    with pytest.raises(ValueError, match="taken"):
        fake.add_bot("another-token", fake.application_id, "Twin")
    with pytest.raises(ValueError, match="token"):
        fake.add_bot(fake.token, QUIZ_ID, "Twin")
    quiz = fake.add_bot(QUIZ_TOKEN, QUIZ_ID, "Quizzy")
    assert [b.application_id for b in fake.bots] == [fake.application_id, QUIZ_ID]
    assert fake.users[QUIZ_ID] is quiz.user
