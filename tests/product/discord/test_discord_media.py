"""Images and voice messages on Discord, end to end: the real discord.py client on the fake
gateway and CDN, the openai SDK on the fake LLM. What reaches the model (a ``data:`` URL of the
bytes, never a CDN link), what is downloaded, what is stored, and the clear refusals.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adapters.discord.media import FileInfo, MediaPolicy, plan
from bot.context import ChatContext, ChatType
from bot.platform.media import AttachmentKind, MediaCaps
from bot.testing.fake_discord import FakeDiscord, Upload
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, OGG, png, running_discord, world

VISION = {"vision": True}


def cat(width: int = 3, height: int = 2, *, padding: int = 0, name: str = "cat.png") -> Upload:
    return Upload(name, png(width, height, padding=padding), width=width, height=height)


def user_content(fake: FakeLLM, index: int = -1) -> Any:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


async def settled(dc: FakeDiscord, channel_id: int, count: int = 1) -> list[dict[str, Any]]:
    await dc.wait_for_message(channel_id, count=count)
    await dc.wait_idle(quiet=0.4)
    return dc.messages(channel_id)


async def stored_texts(app: Any, key: str) -> list[str]:
    turns = await app.store.load_window(key, 50)
    return [str(m["content"]) for t in turns for m in t.messages if m["role"] == "user"]


async def test_an_image_reaches_the_model_as_a_data_url_of_its_bytes(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    picture = cat()
    fake_llm.script(reply("A grey square."), reply("Still grey."))
    async with running_discord(make_app, dc, llm=VISION) as (app, _):
        dc.message(
            w.general, w.member, f"<@{dc.application_id}> what is this?", attachments=[picture]
        )
        [answer] = await settled(dc, GENERAL)
        dc.message(w.general, w.member, f"<@{dc.application_id}> and now?")
        await settled(dc, GENERAL, 2)
        bob = ChatContext("discord", str(GENERAL), ChatType.GROUP, w.member["id"], "Bobby")
        key = app.service.conversation_key(bob)
        stored = await stored_texts(app, key)
    assert answer["content"] == "A grey square."
    first = fake_llm.chat_requests[0]
    [text, image] = user_content(fake_llm, 0)
    assert text["type"] == "text" and "what is this?" in text["text"]
    assert "[image: cat.png, 3x2" in text["text"]
    expected = "data:image/png;base64," + base64.b64encode(picture.data).decode()
    assert image == {"type": "image_url", "image_url": {"url": expected}}
    raw = json.dumps(first.json)
    assert "/attachments/" not in raw and dc.token not in raw and "http://" not in raw
    # The picture went once; the next turn and the history see only the reference line.
    second = json.dumps(fake_llm.chat_requests[1].json)
    assert "base64" not in second and "[image: cat.png, 3x2" in second
    assert all("base64" not in s for s in stored) and any("[image: cat.png" in s for s in stored)
    [download] = dc.cdn.downloads
    assert download.status == 200 and not download.authorized  # no token sent to the CDN


@pytest.mark.parametrize("stream", [True, False])
async def test_an_image_alone_in_a_dm_is_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord, stream: bool
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    fake_llm.script(reply("Nice picture."))
    discord = {"stream": stream}
    async with running_discord(make_app, dc, discord=discord, llm=VISION):
        dc.message(dm, w.member, "", attachments=[cat(name="IMG_0001.PNG")])
        [answer] = await settled(dc, int(dm["id"]))
    assert answer["content"] == "Nice picture."
    parts = user_content(fake_llm)
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_a_mention_replying_to_someones_picture_shows_the_model_that_picture(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    picture = cat(5, 4)
    fake_llm.script(reply("A grey cat, probably."))
    async with running_discord(make_app, dc, llm=VISION):
        posted = dc.message(w.general, w.admin, "my cat", attachments=[picture])
        dc.message(w.general, w.member, f"<@{dc.application_id}> what breed?", reply_to=posted)
        [answer] = await settled(dc, GENERAL)
    assert answer["content"] == "A grey cat, probably."
    [request] = fake_llm.chat_requests
    assert request.images == [picture.data]
    assert "what breed?" in json.dumps(user_content(fake_llm))


async def test_an_over_size_image_is_refused_and_never_downloaded(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    big = cat(padding=4000)
    async with running_discord(make_app, dc, llm={**VISION, "max_image_bytes": 2048}):
        dc.message(w.general, w.member, f"<@{dc.application_id}> look", attachments=[big])
        [answer] = await settled(dc, GENERAL)
    assert "too big" in answer["content"] and "2 KB" in answer["content"]
    assert answer["message_reference"]["message_id"] is not None
    assert fake_llm.chat_requests == [] and dc.cdn.downloads == []


async def test_too_many_images_are_refused_and_none_downloaded(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    files = [cat(name=f"{n}.png") for n in range(3)]
    async with running_discord(make_app, dc, llm={**VISION, "max_images": 2}):
        dc.message(w.general, w.member, f"<@{dc.application_id}> these", attachments=files)
        [answer] = await settled(dc, GENERAL)
    assert "3 images" in answer["content"] and "2" in answer["content"]
    assert fake_llm.chat_requests == [] and dc.cdn.downloads == []


async def test_an_image_not_addressed_to_the_bot_in_a_server_is_not_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("Answered the mention."))
    async with running_discord(make_app, dc, llm=VISION):
        dc.message(w.general, w.member, "my cat", attachments=[cat()])
        dc.message(w.general, w.member, "", attachments=[cat()])
        dc.message(w.general, w.member, f"<@{dc.application_id}> hello")  # arrives after them
        [answer] = await settled(dc, GENERAL)
    assert answer["content"] == "Answered the mention."
    assert dc.cdn.downloads == []
    [request] = fake_llm.chat_requests
    assert "base64" not in json.dumps(request.json)


async def test_a_refused_sender_costs_no_download(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("Hello Alice."))
    denied = {"deny": [f"discord:user:{w.member['id']}"]}
    async with running_discord(make_app, dc, llm=VISION, access=denied):
        dc.message(w.general, w.member, f"<@{dc.application_id}> see", attachments=[cat()])
        dc.message(w.general, w.admin, f"<@{dc.application_id}> hi")
        answers = await settled(dc, GENERAL)
    assert answers[-1]["content"] == "Hello Alice."
    assert dc.cdn.downloads == []  # checked before anything is fetched
    assert "base64" not in json.dumps([r.json for r in fake_llm.chat_requests])


async def test_with_vision_off_the_bot_says_it_cannot_see_images(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc):
        dc.message(w.general, w.member, f"<@{dc.application_id}>", attachments=[cat()])
        [answer] = await settled(dc, GENERAL)
    assert "can't see images" in answer["content"]
    assert fake_llm.chat_requests == [] and dc.cdn.downloads == []


async def test_a_file_discord_no_longer_serves_gets_a_clear_reply(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    dc.cdn.valid_for = -1  # every link is already past its expiry
    async with running_discord(make_app, dc, llm=VISION):
        dc.message(w.general, w.member, f"<@{dc.application_id}> see", attachments=[cat()])
        [answer] = await settled(dc, GENERAL)
    assert answer["content"] == "I couldn't fetch that file from Discord; please send it again."
    assert fake_llm.chat_requests == []
    assert [d.status for d in dc.cdn.downloads] == [404]


async def test_a_message_after_a_picture_is_answered_after_it(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("About the picture."), reply("About the question."))
    dc.cdn.hold()  # a slow CDN: the picture's download waits
    async with running_discord(make_app, dc, llm=VISION):
        picture = dc.message(
            w.general, w.member, f"<@{dc.application_id}> look", attachments=[cat()]
        )
        await dc.wait_until(lambda: dc.cdn.waiting == 1)
        question = dc.message(w.general, w.member, f"<@{dc.application_id}> what is in it?")
        await dc.wait_idle(quiet=0.3)  # time enough for the question to jump the queue
        dc.cdn.release()
        first, second = await settled(dc, GENERAL, 2)
    assert first["message_reference"]["message_id"] == picture["id"]
    assert first["content"] == "About the picture."
    assert second["message_reference"]["message_id"] == question["id"]
    assert [p["type"] for p in user_content(fake_llm, 0)] == ["text", "image_url"]
    assert "what is in it?" in json.dumps(user_content(fake_llm, 1))


async def test_an_overheard_picture_is_kept_as_a_reference_line(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("A cat, you said."))
    async with running_discord(make_app, dc, llm=VISION):
        dc.message(w.general, w.admin, "my cat", attachments=[cat()])
        dc.message(w.general, w.member, f"<@{dc.application_id}> what did Alice post?")
        await settled(dc, GENERAL)
    sent = json.dumps(fake_llm.chat_requests[0].json)
    assert "my cat" in sent and "[image: cat.png, 3x2" in sent and "base64" not in sent
    assert dc.cdn.downloads == []


VOICE = {"transcription_model": "whisper-1"}


@pytest.mark.parametrize("stream", [True, False])
async def test_a_voice_message_is_transcribed_and_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord, stream: bool
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    fake_llm.script_transcriptions(reply("what time is it in Tokyo"))
    fake_llm.script(reply("It is evening in Tokyo."))
    async with running_discord(make_app, dc, discord={"stream": stream}, llm=VOICE) as (app, _):
        dc.voice_message(dm, w.member, OGG, duration_secs=2.5)
        [answer] = await settled(dc, int(dm["id"]))
        bob = ChatContext("discord", dm["id"], ChatType.PRIVATE, w.member["id"], "Bobby")
        stored = await stored_texts(app, app.service.conversation_key(bob))
    assert answer["content"] == "It is evening in Tokyo."
    [heard] = fake_llm.transcription_requests
    assert heard.form["model"] == "whisper-1"
    assert heard.files["file"].data == OGG and heard.files["file"].filename.endswith(".ogg")
    said = json.dumps(user_content(fake_llm))
    assert "what time is it in Tokyo" in said and "/attachments/" not in said
    assert any("[voice message, transcribed] what time is it in Tokyo" in s for s in stored)
    assert [d.status for d in dc.cdn.downloads] == [200]


async def test_in_a_server_a_voice_message_is_answered_only_as_a_reply_to_the_bot(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("Ask me anything."), reply("Tuesday."))
    fake_llm.script_transcriptions(reply("which day is it"))
    async with running_discord(make_app, dc, llm=VOICE):
        dc.message(w.general, w.member, f"<@{dc.application_id}> hi")
        [first] = await settled(dc, GENERAL)
        dc.voice_message(w.general, w.admin, OGG)  # to the room, not to the bot
        dc.voice_message(w.general, w.member, OGG, reply_to=first)
        _, answer = await settled(dc, GENERAL, 2)
    assert answer["content"] == "Tuesday."
    assert len(fake_llm.transcription_requests) == 1 and len(dc.cdn.downloads) == 1
    assert "which day is it" in json.dumps(user_content(fake_llm))


async def test_an_over_size_voice_message_is_refused_and_never_downloaded(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    long = OGG + bytes(3000)
    async with running_discord(make_app, dc, llm={**VOICE, "max_audio_bytes": 2048}):
        dc.voice_message(dm, w.member, long)
        [answer] = await settled(dc, int(dm["id"]))
    assert "voice message is too big" in answer["content"] and "2 KB" in answer["content"]
    assert fake_llm.requests == [] and dc.cdn.downloads == []


async def test_voice_without_a_transcription_model_is_refused_clearly(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    async with running_discord(make_app, dc):
        dc.voice_message(dm, w.member, OGG)
        [answer] = await settled(dc, int(dm["id"]))
    assert answer["content"] == "I can't listen to voice messages here; please send me some text."
    assert fake_llm.requests == [] and dc.cdn.downloads == []


# ---------------------------------------------------------------------------- which files


POLICY = MediaPolicy(
    MediaCaps(max_image_bytes=1000, max_images=2, max_audio_bytes=5000), True, True
)


def _file(name: str, mime: str, size: int = 10, *, voice: bool = False) -> FileInfo:
    return FileInfo(name, mime, size, voice)


@pytest.mark.parametrize(
    ("files", "policy", "expected"),
    [
        pytest.param([_file("a.png", "image/png")], POLICY, [(0, True)], id="image"),
        pytest.param(
            [_file("a.pdf", "application/pdf"), _file("b.jpg", "image/jpeg")],
            POLICY,
            [(1, True)],
            id="other files left out",
        ),
        pytest.param(
            [_file("a.png", "image/png", 1001)], POLICY, [(0, False)], id="over the byte cap"
        ),
        pytest.param(
            [_file("a.svg", "image/svg+xml")], POLICY, [(0, False)], id="a type models refuse"
        ),
        pytest.param(
            [_file(f"{n}.png", "image/png") for n in range(3)],
            POLICY,
            [(0, False), (1, False), (2, False)],
            id="too many: none fetched",
        ),
        pytest.param(
            [_file("a.png", "image/png")],
            MediaPolicy(POLICY.caps, vision=False, transcribes=True),
            [(0, False)],
            id="vision off",
        ),
        pytest.param(
            [_file("voice-message.ogg", "audio/ogg", voice=True)], POLICY, [(0, True)], id="voice"
        ),
        pytest.param(
            [_file("voice-message.ogg", "audio/ogg", 5001, voice=True)],
            POLICY,
            [(0, False)],
            id="voice over the cap",
        ),
        pytest.param(
            [_file("voice-message.ogg", "audio/ogg", voice=True)],
            MediaPolicy(POLICY.caps, vision=True, transcribes=False),
            [(0, False)],
            id="no transcription model",
        ),
        pytest.param([_file("song.mp3", "audio/mpeg")], POLICY, [], id="an audio file is a file"),
    ],
)
def test_which_files_are_downloaded(
    files: list[FileInfo], policy: MediaPolicy, expected: list[tuple[int, bool]]
) -> None:
    assert plan(files, policy) == expected


def test_a_voice_message_is_voice_and_an_image_type_is_an_image() -> None:
    assert _file("x", "audio/ogg", voice=True).kind is AttachmentKind.VOICE
    assert _file("x", "image/heic").kind is AttachmentKind.IMAGE
    assert _file("x", "text/plain").kind is None
