"""Telegram photos, image documents and voice notes, end to end: the adapter's dispatcher fed
in-process (``fed_bot``), its calls to the fake Bot API (getFile, the file route), the openai
SDK on the fake LLM, a real store.

What must hold: the model gets the photo's bytes as a data: URL and never the file URL (it
holds the bot token), nor the token anywhere; history keeps "[image: ...]"; caps and vision
off answer clearly without a model call; a voice note is transcribed and answered; captions
follow the same trigger rules as text in groups.
"""

from __future__ import annotations

import base64
import logging
import struct
from typing import Any

import pytest
from aiogram.types import Message

from adapters.telegram.media import has_media, media_of
from bot.app import App
from bot.context import ChatContext, ChatType
from bot.conversation.media_input import CANNOT_SEE, NO_VOICE, TRANSCRIBED
from bot.platform.media import AttachmentKind
from bot.testing.fake_llm import FakeLLM, RecordedRequest, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import fed_bot

VISION = {"vision": True}
VOICE = {"transcription_model": "whisper-1"}


def jpeg(width: int, height: int, padding: int = 2000) -> bytes:
    """A JPEG header with its frame size, then filler: enough for every check on the way."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9)
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + bytes(3)
    return b"\xff\xd8" + app0 + sof + bytes(padding) + b"\xff\xd9"


def no_token_in(tg: FakeTelegram, request: RecordedRequest) -> None:
    body = request.body.decode()
    secret = tg.token.partition(":")[2]
    assert tg.token not in body and secret not in body
    assert "/file/bot" not in body and tg.api_server not in body
    assert all(url.startswith("data:image/") for url in request.image_urls)


async def stored_user_texts(app: App, chat_id: int, user_id: int) -> list[str]:
    ctx = ChatContext("telegram", str(chat_id), ChatType.PRIVATE, str(user_id))
    turns = await app.service.store.load_window(app.service.conversation_key(ctx), 50)
    return [str(m["content"]) for t in turns for m in t.messages if m["role"] == "user"]


async def test_a_photo_reaches_the_model_as_bytes_and_history_keeps_a_reference(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    big, thumb = jpeg(1280, 960), jpeg(640, 480, padding=10)
    fake_llm.script(reply("A cat."), reply("Grey."))
    async with fed_bot(make_app, tg, llm=VISION) as fed:
        tg.send_photo(chat, alice, big, "what is this?", thumbnails=[thumb])
        [answer] = await fed.replies(chat["id"])
        assert answer["text"] == "A cat."
        request = fake_llm.chat_requests[-1]
        assert request.images == [big]  # the largest size, as bytes
        no_token_in(tg, request)
        content = request.json["messages"][-1]["content"]
        ref = f"[image: photo.jpg, 1280x960, {round(len(big) / 1024)} KB]"
        assert content[0] == {"type": "text", "text": f"what is this?\n{ref}"}
        assert len(tg.downloads) == 1

        tg.send(chat, alice, "what colour?")
        await fed.replies(chat["id"], count=2)
        later = fake_llm.chat_requests[-1]
        assert later.images == [] and b"base64" not in later.body
        assert later.json["messages"][1]["content"] == f"what is this?\n{ref}"
        assert await stored_user_texts(fed.app, chat["id"], 7) == [
            f"what is this?\n{ref}",
            "what colour?",
        ]
    assert tg.token not in caplog.text and tg.token.partition(":")[2] not in caplog.text


async def test_the_largest_size_under_the_cap_is_sent_and_over_size_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    small, big = jpeg(320, 240, padding=500), jpeg(1280, 960, padding=4000)
    async with fed_bot(make_app, tg, llm={"vision": True, "max_image_bytes": 2048}) as fed:
        tg.send_photo(chat, alice, big, "which one?", thumbnails=[small])
        await fed.replies(chat["id"])
        assert fake_llm.chat_requests[-1].images == [small]

        tg.send_document(chat, alice, big, "scan.jpg", "image/jpeg", "and this?")
        [_, refused] = await fed.replies(chat["id"], count=2)
    assert refused["text"] == "That image is too big (4 KB; the limit is 2 KB)."
    assert len(fake_llm.chat_requests) == 1
    assert len(tg.downloads) == 1  # the over-size file was never fetched


async def test_an_image_document_is_sent_with_its_own_type(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    )
    async with fed_bot(make_app, tg, llm=VISION, telegram={"stream": False}) as fed:
        tg.send_document(chat, alice, png, "chart.png", "image/png")
        await fed.replies(chat["id"])
    request = fake_llm.chat_requests[-1]
    assert request.image_urls == ["data:image/png;base64," + base64.b64encode(png).decode()]
    assert request.json["messages"][-1]["content"][0]["text"] == "[image: chart.png, 1x1, 70 bytes]"
    no_token_in(tg, request)


async def test_vision_off_says_it_cannot_see_and_fetches_nothing(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with fed_bot(make_app, tg) as fed:
        tg.send_photo(chat, alice, jpeg(800, 600))
        [said] = await fed.replies(chat["id"])
        assert said["text"] == CANNOT_SEE
        assert fake_llm.chat_requests == []
        tg.send_photo(chat, alice, jpeg(800, 600), "is it a cat?", width=800, height=600)
        await fed.replies(chat["id"], count=2)
    request = fake_llm.chat_requests[-1]
    assert request.images == [] and request.image_urls == []
    text = request.json["messages"][-1]["content"]
    assert text.startswith("is it a cat?\n[image: photo.jpg, 800x600,")
    assert "cannot see" in text
    assert tg.downloads == []


async def test_a_voice_note_is_transcribed_and_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    audio = b"OggS" + bytes(range(256)) * 4
    fake_llm.script_transcriptions(reply("remind me to buy milk"))
    fake_llm.script(reply("Noted: milk."))
    async with fed_bot(make_app, tg, llm=VOICE) as fed:
        tg.send_voice(chat, alice, audio, duration=4)
        [answer] = await fed.replies(chat["id"])
        assert answer["text"] == "Noted: milk."
        (upload,) = fake_llm.transcription_requests
        assert upload.files["file"].data == audio
        assert upload.form["model"] == "whisper-1"
        marked = f"{TRANSCRIBED} remind me to buy milk"
        assert fake_llm.chat_requests[-1].json["messages"][-1]["content"] == marked
        assert await stored_user_texts(fed.app, chat["id"], 7) == [marked]
    assert tg.token not in upload.body.decode("latin-1")


async def test_voice_without_a_transcription_model_is_refused_clearly(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with fed_bot(make_app, tg) as fed:
        tg.send_voice(chat, alice, b"OggS voice")
        [said] = await fed.replies(chat["id"])
    assert said["text"] == NO_VOICE
    assert fake_llm.requests == [] and tg.downloads == []


async def test_captions_follow_the_group_trigger_rules(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False  # the bot sees every group message; the rules decide
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    first, second, third = jpeg(100, 100), jpeg(200, 200), jpeg(300, 300)
    async with fed_bot(make_app, tg, llm=VISION) as fed:
        tg.send_photo(group, bob, first, "holiday pics")  # not addressed: context only
        asked = tg.send_photo(group, alice, second, "@parlour_bot where is this?")
        [answer] = await fed.replies(group["id"])
        assert answer["reply_to_message"]["message_id"] == asked["message_id"]
        request = fake_llm.chat_requests[-1]
        assert request.images == [second]
        users = [m["content"] for m in request.json["messages"] if m["role"] == "user"]
        assert users[0] == "[Bob] holiday pics"  # the overheard caption, no picture
        assert users[-1][0]["text"].startswith("[Alice] where is this?\n[Alice] [image: photo.jpg")

        tg.send_photo(group, bob, third, reply_to=answer)  # a reply to the bot, no caption
        await fed.replies(group["id"], count=2)
    assert fake_llm.chat_requests[-1].images == [third]
    assert len(fake_llm.chat_requests) == 2
    assert len(tg.downloads) == 2  # the unaddressed photo was never fetched


# -- which file of a message is fetched (pure) -------------------------------------------------


def tg_message(**fields: Any) -> Message:
    data = {"message_id": 5, "date": 0, "chat": {"id": 7, "type": "private"}, **fields}
    return Message.model_validate(data)


def size(n: int, width: int, file_size: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"file_id": f"f{n}", "file_unique_id": f"u{n}"}
    entry |= {"width": width, "height": width * 3 // 4}
    return entry | ({"file_size": file_size} if file_size is not None else {})


@pytest.mark.parametrize(
    ("sizes", "cap", "chosen"),
    [
        ([size(0, 90, 1_000), size(1, 320, 15_000), size(2, 1280, 200_000)], 5_000_000, "f2"),
        ([size(0, 90, 1_000), size(1, 320, 15_000), size(2, 1280, 200_000)], 100_000, "f1"),
        ([size(0, 1280, 200_000), size(1, 90, 1_000)], 100_000, "f1"),  # any order
        ([size(0, 90, 9_000), size(1, 320, 15_000)], 1_024, "f0"),  # none fits: refused later
        ([size(0, 90, None), size(1, 320, None)], 1_024, "f1"),  # sizes unknown: the largest
    ],
)
def test_the_photo_size_is_the_largest_within_the_cap(
    sizes: list[dict[str, Any]], cap: int, chosen: str
) -> None:
    (found,) = media_of(tg_message(photo=sizes), cap)
    assert (found.kind, found.file_id, found.mime_type) == (
        AttachmentKind.IMAGE,
        chosen,
        "image/jpeg",
    )


def test_documents_voice_and_audio() -> None:
    doc = {
        "file_id": "d",
        "file_unique_id": "ud",
        "file_name": "a.pdf",
        "mime_type": "application/pdf",
    }
    assert media_of(tg_message(document=doc), 10**6) == []  # not an image: not ours
    assert not has_media(tg_message(text="hi"))
    image = doc | {"file_name": "p.webp", "mime_type": "image/webp", "file_size": 10}
    (found,) = media_of(tg_message(document=image), 10**6)
    assert (found.kind, found.name, found.mime_type, found.size) == (
        AttachmentKind.IMAGE,
        "p.webp",
        "image/webp",
        10,
    )
    voice = {"file_id": "v", "file_unique_id": "uv", "duration": 4, "mime_type": "audio/ogg"}
    audio = {"file_id": "a", "file_unique_id": "ua", "duration": 60, "file_name": "s.mp3"}
    kinds = [(f.kind, f.name, f.duration) for f in media_of(tg_message(voice=voice), 1)]
    assert kinds == [(AttachmentKind.VOICE, "voice.ogg", 4)]
    (song,) = media_of(tg_message(audio=audio), 1)
    assert (song.kind, song.name, song.mime_type) == (AttachmentKind.VOICE, "s.mp3", "audio/mpeg")


async def test_a_failed_download_is_told_without_the_token(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with fed_bot(make_app, tg, llm=VISION) as fed:
        tg.fail("getFile", 400, "Bad Request: wrong file_id or the file is temporarily unavailable")
        tg.send_photo(chat, alice, jpeg(640, 480), "first")
        [first] = await fed.replies(chat["id"])
        tg.fail("download", 404, "Not Found")
        tg.send_photo(chat, alice, jpeg(640, 480), "second")
        [_, second] = await fed.replies(chat["id"], count=2)
        assert await stored_user_texts(fed.app, chat["id"], 7) == []
    told = "I couldn't fetch that file from Telegram; please send it again."
    assert first["text"] == second["text"] == told
    assert fake_llm.requests == []
    assert "download failed" in caplog.text and "ClientResponseError" in caplog.text
    assert tg.token not in caplog.text and tg.token.partition(":")[2] not in caplog.text
