"""The fake Discord's attachments and voice messages, read by the real discord.py client.

A user's file arrives as Discord sends it (an Attachment object with ``content_type``,
``width``/``height``, or ``duration_secs``/``waveform`` and the IS_VOICE_MESSAGE flag) and its
bytes come from the fake's CDN at the signed URL, without the bot token, as on Discord.
"""

from __future__ import annotations

import asyncio
import base64
import warnings
from typing import Any

import aiohttp

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord

from bot.testing.fake_discord import FakeDiscord, Upload
from tests.discord_harness import OGG, png
from tests.kit.test_fake_discord import (
    _restore_endpoints,  # noqa: F401 (autouse fixture)
    intents,
    make_client,
    running,
    world,
)

JSONDict = dict[str, Any]


def _queue(client: discord.Client) -> asyncio.Queue[discord.Message]:
    received: asyncio.Queue[discord.Message] = asyncio.Queue()

    @client.event
    async def on_message(message: discord.Message) -> None:
        await received.put(message)

    return received


async def test_an_image_arrives_with_its_metadata_and_bytes_from_the_cdn(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    picture = png(3, 2)
    client = make_client()
    received = _queue(client)
    async with running(fake, client):
        sent = fake.message(general, alice, "look", attachments=[Upload("cat.png", picture)])
        message = await asyncio.wait_for(received.get(), 5)
        [attachment] = message.attachments
        assert attachment.filename == "cat.png" and attachment.size == len(picture)
        assert attachment.content_type == "image/png"  # guessed from the name, as Discord does
        assert (attachment.width, attachment.height) == (3, 2)  # measured, as Discord does
        assert not attachment.is_voice_message() and not message.flags.voice
        assert fake.token not in attachment.url
        assert {"ex", "is", "hm"} <= set(_query(attachment.url))
        assert await attachment.read() == picture
        assert await attachment.read(use_cached=True) == picture  # the proxy serves it too
    assert sent["attachments"][0]["id"] == str(attachment.id)
    assert [(d.status, d.authorized, d.via_proxy) for d in fake.cdn.downloads] == [
        (200, False, False),
        (200, False, True),
    ]


async def test_a_tampered_or_expired_link_is_404(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    client = make_client()
    received = _queue(client)
    async with running(fake, client):
        fake.message(general, alice, "x", attachments=[Upload("a.txt", b"hello")])
        [attachment] = (await asyncio.wait_for(received.get(), 5)).attachments
        assert attachment.content_type == "text/plain"
        async with aiohttp.ClientSession() as http:
            tampered = attachment.url.replace("hm=", "hm=0")
            async with http.get(tampered) as response:
                assert response.status == 404
                assert await response.text() == "This content is no longer available."
            unsigned = attachment.url.split("?")[0]
            async with http.get(unsigned) as response:
                assert response.status == 404
        fake.cdn.expire()
        try:
            await attachment.read()
        except discord.NotFound:
            pass
        else:  # pragma: no cover - the assertion below names the failure
            raise AssertionError("an expired link was served")
    assert [d.status for d in fake.cdn.downloads] == [404, 404, 404]


async def test_a_voice_message_is_flagged_with_duration_and_waveform(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, _, alice, _ = world(fake)
    client = make_client()
    received = _queue(client)
    async with running(fake, client):
        fake.voice_message(fake.dm(alice), alice, OGG, duration_secs=2.5)
        message = await asyncio.wait_for(received.get(), 5)
        assert message.content == "" and message.flags.voice
        [attachment] = message.attachments
        assert attachment.is_voice_message()
        assert attachment.filename == "voice-message.ogg"
        assert attachment.content_type == "audio/ogg" and attachment.duration == 2.5
        assert attachment.waveform and len(attachment.waveform) <= 256
        assert await attachment.read() == OGG


async def test_without_message_content_an_unaddressed_message_has_no_attachments(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    client = make_client(intents=intents(content=False, members=False))
    received = _queue(client)
    upload = Upload("cat.png", png(1, 1), width=1, height=1)
    async with running(fake, client):
        fake.message(general, alice, "unaddressed", attachments=[upload])
        fake.message(general, alice, f"<@{fake.application_id}> this", attachments=[upload])
        quiet = await asyncio.wait_for(received.get(), 5)
        addressed = await asyncio.wait_for(received.get(), 5)
    assert quiet.attachments == [] and quiet.content == ""
    assert [a.filename for a in addressed.attachments] == ["cat.png"]


async def test_more_than_ten_files_cannot_be_posted(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    _, general, alice, _ = world(fake)
    files = [Upload(f"{i}.txt", b"x") for i in range(11)]
    try:
        fake.message(general, alice, "many", attachments=files)
    except ValueError as exc:
        assert "at most 10" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("11 attachments were accepted")


async def test_http_control_api_posts_files_and_voice_messages(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    base = fake.api_base.removesuffix("/api/v10")
    picture = base64.b64encode(png(2, 2)).decode()
    async with aiohttp.ClientSession() as http:
        payload: JSONDict = {
            "channel_id": 77,
            "user_id": 5,
            "content": "see",
            "guild_id": 7,
            "attachments": [{"filename": "p.png", "data": picture, "width": 2, "height": 2}],
        }
        async with http.post(f"{base}/_fake/message", json=payload) as response:
            message = await response.json()
        [attachment] = message["attachments"]
        assert attachment["content_type"] == "image/png" and attachment["width"] == 2
        async with http.get(attachment["url"]) as response:
            assert await response.read() == png(2, 2)
        voice = {"data": base64.b64encode(OGG).decode(), "duration_secs": 1.5}
        payload = {"channel_id": 78, "user_id": 5, "voice_message": voice}
        async with http.post(f"{base}/_fake/message", json=payload) as response:
            message = await response.json()
        assert message["flags"] == 1 << 13 and message["content"] == ""
        assert message["attachments"][0]["duration_secs"] == 1.5
        payload = {"channel_id": 78, "user_id": 5, "content": "", "attachments": [{"data": "!"}]}
        async with http.post(f"{base}/_fake/message", json=payload) as response:
            assert response.status == 400


def _query(url: str) -> dict[str, str]:
    query = url.split("?", 1)[1]
    return dict(part.split("=", 1) for part in query.split("&") if part)
