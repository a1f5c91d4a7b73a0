"""The type an image reaches the model under is the one its bytes say, whatever Telegram or the
sender declared: the adapter fed in-process, its calls on the fake Bot API, the openai SDK on
the fake LLM, a real store.

An ELF file sent as a JPEG photo or an ``image/jpeg`` document is refused with a clear line and
never reaches the model as an image; a PNG declared a JPEG goes as ``data:image/png``.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from bot.platform.media import NOT_AN_IMAGE
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.product.telegram.test_telegram_media import stored_user_texts
from tests.telegram_harness import fed_bot

VISION = {"vision": True}
PNG = base64.b64decode(  # 1x1, as a screenshot tool saves it
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00" + bytes(600)


def send(
    tg: FakeTelegram, how: str, chat: dict[str, Any], user: dict[str, Any], data: bytes
) -> None:
    """As a photo (Telegram calls every photo a JPEG) or as an ``image/jpeg`` document."""
    if how == "photo":
        tg.send_photo(chat, user, data, "what is this?")
    else:
        tg.send_document(chat, user, data, "holiday.jpg", "image/jpeg", "what is this?")


@pytest.mark.parametrize("how", ["photo", "document"])
async def test_an_elf_file_declared_a_jpeg_never_reaches_the_model_as_an_image(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, how: str
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.script(reply("Hello again."))
    async with fed_bot(make_app, tg, llm=VISION, telegram={"stream": False}) as fed:
        send(tg, how, chat, alice, ELF)
        [refused] = await fed.replies(chat["id"])
        tg.send(chat, alice, "hello?")
        [_, answer] = await fed.replies(chat["id"], count=2)
        stored = await stored_user_texts(fed.app, chat["id"], 7)
    assert refused["text"] == NOT_AN_IMAGE
    assert answer["text"] == "Hello again."
    [request] = fake_llm.chat_requests  # the refused message cost no model call
    assert request.image_urls == [] and b"base64" not in request.body
    assert stored == ["hello?"]  # nothing of the refused message was stored
    assert len(tg.downloads) == 1  # fetched, looked at, refused


@pytest.mark.parametrize("how", ["photo", "document"])
async def test_a_png_declared_a_jpeg_reaches_the_model_as_a_png(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, how: str
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    picture = PNG
    fake_llm.script(reply("A grey square."))
    async with fed_bot(make_app, tg, llm=VISION) as fed:
        send(tg, how, chat, alice, picture)
        [answer] = await fed.replies(chat["id"])
    assert answer["text"] == "A grey square."
    [request] = fake_llm.chat_requests
    assert request.image_urls == ["data:image/png;base64," + base64.b64encode(picture).decode()]
