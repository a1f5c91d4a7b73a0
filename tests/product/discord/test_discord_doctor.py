"""Discord's doctor rows (discord.py's REST client against the fake) and the same checks
logged at WARNING when the adapter starts."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import discord
import pytest

from adapters.discord import diagnose
from adapters.discord.doctor import guild_permissions
from adapters.discord.endpoints import reset_endpoints
from bot.doctor import Check, exit_code
from bot.testing.discord.permissions import Perm
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory, make_settings
from tests.discord_harness import GUILD, discord_section, running_discord, world

OTHER = 200  # a server named in access.allow


@pytest.fixture(autouse=True)
def _endpoints() -> Iterator[None]:
    yield
    reset_endpoints()  # the checks point discord.py at the fake, process-wide


async def rows_for(
    fake_llm: FakeLLM, dc: FakeDiscord, tmp_path: Path, **overrides: Any
) -> dict[str, Check]:
    settings = make_settings(
        fake_llm,
        tmp_path,
        discord=discord_section(dc, **overrides),
        access={"allow": [f"discord:guild:{OTHER}", "discord:guild:*", "*:private"]},
    )
    return {check.name: check for check in await diagnose(settings)}


async def test_a_healthy_bot_passes(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    world(dc)
    other = dc.guild(OTHER, "Side project", everyone_permissions=Perm.VIEW_CHANNEL)
    helper = dc.role(other, 201, "Parlour", Perm.SEND_MESSAGES | Perm.READ_MESSAGE_HISTORY)
    dc.role(other, 202, "Commands", Perm.USE_APPLICATION_COMMANDS)
    dc.member(other, dc.bot_user, roles=[int(helper["id"]), 202])  # granted by its roles
    rows = await rows_for(fake_llm, dc, tmp_path)
    assert list(rows) == [
        "discord token",
        "discord intents",
        f"discord server {GUILD}",
        f"discord server {OTHER}",
    ]
    assert rows["discord token"].detail == f"parlour (id {dc.application_id})"
    assert rows["discord intents"].detail == "message content on, server members on (not used)"
    assert rows[f"discord server {GUILD}"].ok
    side = rows[f"discord server {OTHER}"]
    assert side.status == "warn"  # threads and link previews are nice to have
    assert (
        side.detail == "'Side project': missing permissions: Send Messages in Threads, Embed Links"
    )
    assert exit_code(list(rows.values())) == 0
    routes = [r.route for r in dc.requests]
    assert routes[:2] == ["GET /users/@me", "GET /oauth2/applications/@me"]
    assert "GET /guilds/{guild_id}/members/{user_id}" in routes


async def test_a_wrong_token_is_named_as_rejected(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    rows = await rows_for(fake_llm, fake_discord, tmp_path, token="wrong.token.value")
    [token] = rows.values()
    assert token.status == "FAIL"
    assert token.detail == "the bot token was rejected by Discord (401 Unauthorized)"
    assert "Developer Portal" in token.fix


async def test_a_missing_message_content_intent_fails(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    world(dc)
    dc.privileged_intents = False  # not ticked in the Developer Portal
    rows = await rows_for(fake_llm, dc, tmp_path)
    intents = rows["discord intents"]
    assert intents.status == "FAIL"
    assert intents.detail.startswith("message content off, server members off")
    assert "Message Content Intent" in intents.fix
    assert exit_code(list(rows.values())) == 1

    # A bot that only answers slash commands does not need it.
    rows = await rows_for(fake_llm, dc, tmp_path, mention_trigger=False, keep_context=False)
    assert rows["discord intents"].ok


async def test_missing_server_permissions_fail_with_an_invite_link(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    dc.guild(GUILD, "Parlour HQ", everyone_permissions=Perm.VIEW_CHANNEL | Perm.SEND_MESSAGES)
    rows = await rows_for(fake_llm, dc, tmp_path)
    server = rows[f"discord server {GUILD}"]
    assert server.status == "FAIL"
    assert server.detail == (
        "'Parlour HQ': missing permissions: Read Message History, Send Messages in Threads, "
        "Embed Links, Use Application Commands"
    )
    assert f"client_id={dc.application_id}&scope=bot+applications.commands" in server.fix
    missing = rows[f"discord server {OTHER}"]  # never joined
    assert missing.status == "FAIL" and "the bot is not in it" in missing.detail


def test_permissions_come_from_everyone_and_the_members_roles() -> None:
    guild = {
        "id": "1",
        "owner_id": "9",
        "roles": [
            {"id": "1", "permissions": str(Perm.VIEW_CHANNEL)},
            {"id": "2", "permissions": str(Perm.SEND_MESSAGES)},
            {"id": "3", "permissions": str(Perm.ADMINISTRATOR)},
        ],
    }
    assert guild_permissions(guild, {"roles": []}, 5).value == Perm.VIEW_CHANNEL
    both = guild_permissions(guild, {"roles": ["2"]}, 5)
    assert both.value == Perm.VIEW_CHANNEL | Perm.SEND_MESSAGES
    assert guild_permissions(guild, {"roles": ["3"]}, 5) == discord.Permissions.all()
    assert guild_permissions(guild, {"roles": []}, 9) == discord.Permissions.all()  # the owner


async def test_run_logs_the_same_problems_at_warning_on_start(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dc = fake_discord
    dc.guild(GUILD, "Parlour HQ", everyone_permissions=Perm.VIEW_CHANNEL)
    dc.privileged_intents = False
    caplog.set_level(logging.INFO, logger="adapters.discord")
    async with running_discord(make_app, dc):
        pass
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "adapters.discord.adapter"
    ]
    assert sum(m.startswith("discord: discord intents: message content off") for m in warnings) == 1
    [server] = [m for m in warnings if m.startswith(f"discord: discord server {GUILD}:")]
    assert "missing permissions: Send Messages," in server and "(fix: give the bot's role" in server
