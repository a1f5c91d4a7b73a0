"""The type an image reaches the model under is the one its bytes say, whatever Discord's
``content_type`` claims: discord.py on the fake gateway and CDN, the openai SDK on the fake LLM.
"""

from __future__ import annotations

import base64

from bot.platform.media import NOT_AN_IMAGE
from bot.testing.fake_discord import FakeDiscord, Upload
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, png, running_discord, world
from tests.product.discord.test_discord_media import settled, user_content

VISION = {"vision": True}
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00" + bytes(600)


async def test_an_elf_file_declared_a_jpeg_never_reaches_the_model_as_an_image(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("Hello again."))
    fake = Upload("cat.jpg", ELF, content_type="image/jpeg", width=640, height=480)
    mention = f"<@{dc.application_id}>"
    async with running_discord(make_app, dc, llm=VISION):
        dc.message(w.general, w.member, f"{mention} what is this?", attachments=[fake])
        [refused] = await settled(dc, GENERAL)
        dc.message(w.general, w.member, f"{mention} hello?")
        [_, answer] = await settled(dc, GENERAL, 2)
    assert refused["content"] == NOT_AN_IMAGE
    assert answer["content"] == "Hello again."
    [request] = fake_llm.chat_requests  # the refused message cost no model call
    assert request.image_urls == [] and b"base64" not in request.body
    assert [d.status for d in dc.cdn.downloads] == [200]  # fetched, looked at, refused


async def test_a_png_declared_a_jpeg_reaches_the_model_as_a_png(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    picture = png(3, 2)
    fake_llm.script(reply("A grey square."))
    upload = Upload("cat.jpg", picture, content_type="image/jpeg")
    async with running_discord(make_app, dc, llm=VISION):
        dc.message(w.general, w.member, f"<@{dc.application_id}> look", attachments=[upload])
        [answer] = await settled(dc, GENERAL)
    assert answer["content"] == "A grey square."
    [_, image] = user_content(fake_llm)
    expected = "data:image/png;base64," + base64.b64encode(picture).decode()
    assert image == {"type": "image_url", "image_url": {"url": expected}}
