"""Documents sent to a chat with ``/knowledge add BASE`` as their caption (Telegram) or with the
``/knowledge`` slash command's ``file`` option (Discord): the real adapters on the fakes, the
openai SDK on the fake LLM. Who may add, what crosses the wire (no download for a refused
sender or an oversized file), what is stored, and that a member's question then finds it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.app import App
from bot.testing.fake_discord import FakeDiscord, Upload
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, running_discord, world
from tests.product.discord.test_discord import answered
from tests.product.discord.test_discord_media import settled
from tests.product.knowledge.test_formats import encrypted_pdf, pdf_with_text
from tests.product.knowledge.test_knowledge_chat import passage_block
from tests.telegram_harness import fed_bot

PDF = "application/pdf"
EPHEMERAL = 1 << 6
BASES: dict[str, Any] = {"bases": {"rules": {"chat_uploads": True}}}
PRESET = {"chats": [{"match": "telegram:-100", "knowledge": ["rules"]}]}
HANDBOOK = pdf_with_text("The lighthouse key hangs behind the blue door.")
TG = {"stream": False}


def get_files(tg: FakeTelegram) -> int:
    return sum(c.method == "getFile" for c in tg.calls)


def looked_up(tg: FakeTelegram) -> list[int]:
    """The users whose chat membership the bot asked about."""
    calls = [c for c in tg.calls if c.method == "getChatMember"]
    return [int(c.params["user_id"]) for c in calls if int(c.params["user_id"]) != tg.bot_id]


async def sources(app: App) -> list[str]:
    return [d.source for d in await app.platform.store.list_documents("rules")]


async def chunk_texts(app: App, source: str) -> str:
    return "\n".join(c.text for c in await app.platform.store.document_chunks("rules", source))


def team_of(tg: FakeTelegram) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The bound group -100 with its admin Alice (7) and its member Bob (8)."""
    team = tg.group(-100, "Team", supergroup=True)
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    tg.set_member(team["id"], alice["id"], "administrator")
    tg.set_member(team["id"], bob["id"], "member")
    return team, alice, bob


# -- Telegram ------------------------------------------------------------------------------------


async def test_a_group_admins_pdf_is_added_and_a_members_question_finds_it(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, alice, bob = team_of(tg)
    async with fed_bot(make_app, tg, telegram=TG, knowledge=BASES, **PRESET) as fed:
        sent = tg.send_document(
            team, alice, HANDBOOK, "handbook.pdf", PDF, caption="/knowledge add rules"
        )
        [added] = await fed.replies(team["id"])
        assert added["text"] == "handbook.pdf added in rules: 1 passage."
        assert added["reply_to_message"]["message_id"] == sent["message_id"]
        assert looked_up(tg) == [7]  # Alice's rights, from getChatMember
        assert get_files(tg) == 1 and len(tg.downloads) == 1
        [document] = await fed.app.platform.store.list_documents("rules")
        assert (document.source, document.added_by) == ("handbook.pdf", "telegram:7")
        assert "lighthouse key" in await chunk_texts(fed.app, "handbook.pdf")
        assert fake_llm.chat_requests == []  # an upload is not a question

        fake_llm.script(reply("Behind the blue door [1]."))
        tg.send(team, bob, "@parlour_bot where is the lighthouse key?")
        messages = await fed.replies(team["id"], count=2)
    block = passage_block(fake_llm)
    assert block is not None
    assert "The lighthouse key hangs behind the blue door." in block["content"]
    assert "handbook.pdf" in block["content"]
    assert "Sources: [1] handbook.pdf" in messages[-1]["text"]


async def test_a_members_document_is_refused_without_a_download(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, _, bob = team_of(tg)
    async with fed_bot(make_app, tg, telegram=TG, knowledge=BASES, **PRESET) as fed:
        tg.send_document(team, bob, HANDBOOK, "handbook.pdf", PDF, caption="/knowledge add rules")
        [refused] = await fed.replies(team["id"])
        assert "Only this chat's admins can add documents" in refused["text"]
        assert get_files(tg) == 0 and tg.downloads == []
        assert await sources(fed.app) == []
    assert fake_llm.chat_requests == []


async def test_an_upload_meets_the_access_lists_like_any_command(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    closed = {"allow": ["telegram:-999"]}  # the group is not on the list
    async with fed_bot(make_app, tg, telegram=TG, knowledge=BASES, access=closed, **PRESET) as fed:
        tg.send_document(team, alice, HANDBOOK, "handbook.pdf", PDF, caption="/knowledge add rules")
        await fed.feed()
        assert get_files(tg) == 0 and tg.downloads == []
        assert await sources(fed.app) == []


async def test_a_changed_file_replaces_its_passages_and_the_same_file_is_unchanged(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    first = pdf_with_text("Quiet hours start at ten in the evening.")
    second = pdf_with_text("Quiet hours start at eleven since the vote.")
    async with fed_bot(make_app, tg, telegram=TG, knowledge=BASES, **PRESET) as fed:
        caption = "/knowledge add rules"
        tg.send_document(team, alice, first, "hours.pdf", PDF, caption=caption)
        [added] = await fed.replies(team["id"])
        assert added["text"] == "hours.pdf added in rules: 1 passage."

        tg.send_document(
            team, alice, second, "hours.pdf", PDF, caption="/knowledge@parlour_bot add rules"
        )
        messages = await fed.replies(team["id"], count=2)
        assert messages[-1]["text"] == "hours.pdf replaced in rules: 1 passage."
        stored = await chunk_texts(fed.app, "hours.pdf")
        assert "eleven since the vote" in stored and "ten in the evening" not in stored
        assert await sources(fed.app) == ["hours.pdf"]

        tg.send_document(team, alice, second, "hours.pdf", PDF, caption=caption)
        messages = await fed.replies(team["id"], count=3)
        assert messages[-1]["text"] == "hours.pdf is already in rules, unchanged."
        assert await chunk_texts(fed.app, "hours.pdf") == stored
    assert get_files(tg) == 3


@pytest.mark.parametrize(
    ("name", "data", "reason", "downloaded"),
    [
        ("broken.pdf", b"%PDF-1.4\n garbage", "not a readable PDF", True),
        ("locked.pdf", encrypted_pdf(), "encrypted", True),
        ("huge.pdf", pdf_with_text("x" * 3000), "over the limit of 2,000", False),
    ],
)
async def test_a_bad_or_oversized_document_is_refused_and_the_base_unchanged(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    name: str,
    data: bytes,
    reason: str,
    downloaded: bool,
) -> None:
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    knowledge = BASES | {"max_file_bytes": 2000}
    async with fed_bot(make_app, tg, telegram=TG, knowledge=knowledge, **PRESET) as fed:
        tg.send_document(team, alice, data, name, PDF, caption="/knowledge add rules")
        [refused] = await fed.replies(team["id"])
        assert refused["text"].startswith(f"Refused: {name}: ")
        assert reason in refused["text"] and refused["text"].endswith("rules is unchanged.")
        assert get_files(tg) == (1 if downloaded else 0)
        assert await sources(fed.app) == []


async def test_a_document_over_telegrams_download_limit_is_refused_before_get_file(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    knowledge = BASES | {"max_file_bytes": 50_000_000}
    big = b"%PDF-1.4\n" + bytes(21 * 1024 * 1024)
    async with fed_bot(make_app, tg, telegram=TG, knowledge=knowledge, **PRESET) as fed:
        tg.send_document(team, alice, big, "scans.pdf", PDF, caption="/knowledge add rules")
        [refused] = await fed.replies(team["id"])
        text = refused["text"]
        assert "Telegram lets bots download files of 20 MB at most" in text
        assert "this one is 21 MB" in text and "parlour knowledge add rules" in text
        assert get_files(tg) == 0
        assert await sources(fed.app) == []


async def test_other_documents_are_handled_as_before(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    fake_llm.script(reply("It is a PDF."))
    async with fed_bot(make_app, tg, telegram=TG, knowledge=BASES, **PRESET) as fed:
        tg.send_document(team, alice, HANDBOOK, "handbook.pdf", PDF)  # no caption: overheard
        await fed.silence(team["id"])
        tg.send_document(
            team, alice, HANDBOOK, "handbook.pdf", PDF, caption="@parlour_bot what is it?"
        )
        [answer] = await fed.replies(team["id"])
        assert answer["text"] == "It is a PDF."
        assert fake_llm.chat_requests[-1].json["messages"][-1]["content"].endswith("what is it?")
        assert get_files(tg) == 0
        assert await sources(fed.app) == []


async def test_without_knowledge_bases_the_caption_is_an_unknown_command(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with fed_bot(make_app, tg, telegram=TG, admins=["telegram:7"]) as fed:
        assert fed.app.platform.knowledge is None
        tg.send_document(chat, alice, HANDBOOK, "handbook.pdf", PDF, caption="/knowledge add rules")
        [answer] = await fed.replies(chat["id"])
        assert answer["text"] == "Unknown command /knowledge. Try /help."
        assert get_files(tg) == 0
    assert fake_llm.chat_requests == []


# -- Discord -------------------------------------------------------------------------------------


async def test_discord_an_admins_slash_upload_is_added_and_a_members_refused(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    preset = {"chats": [{"match": f"discord:{GENERAL}", "knowledge": ["rules"]}]}
    async with running_discord(make_app, dc, knowledge=BASES, **preset) as (app, _):
        registered = {c["name"]: c for c in dc.commands(GUILD)}
        options = {o["name"]: o["type"] for o in registered["knowledge"]["options"]}
        assert options == {"text": 3, "file": 11}  # 11: an attachment

        upload = Upload("handbook.pdf", HANDBOOK, PDF)
        with pytest.raises(ValueError, match="default_member_permissions"):
            dc.slash(w.general, w.member, "knowledge", {"text": "add rules", "file": upload})
        dc.allow_command(w.guild, "knowledge")  # a server admin opened it: still refused
        refused = dc.slash(w.general, w.member, "knowledge", {"text": "add rules", "file": upload})
        answer = await answered(dc, refused)
        assert "Only this chat's admins can add documents" in answer["content"]
        assert dc.cdn.downloads == []  # refused before the file was fetched
        assert await sources(app) == []

        added = dc.slash(w.general, w.admin, "knowledge", {"text": "add rules", "file": upload})
        answer = await answered(dc, added)
        assert answer["content"] == "handbook.pdf added in rules: 1 passage."
        assert int(answer["flags"]) & EPHEMERAL
        assert len(dc.cdn.downloads) == 1 and not dc.cdn.downloads[0].authorized
        [document] = await app.platform.store.list_documents("rules")
        assert (document.source, document.added_by) == ("handbook.pdf", f"discord:{w.admin['id']}")
        assert "lighthouse key" in await chunk_texts(app, "handbook.pdf")

        listed = await answered(dc, dc.slash(w.general, w.admin, "knowledge"))
        assert "Knowledge bases searched here:\n- rules" in listed["content"]  # the command
        no_file = dc.slash(w.general, w.admin, "knowledge", {"text": "add rules"})
        assert "Attach the document" in (await answered(dc, no_file))["content"]
        assert len(dc.cdn.downloads) == 1


async def test_discord_a_mention_with_a_document_adds_it_for_an_admin_only(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    preset = {"chats": [{"match": f"discord:{GENERAL}", "knowledge": ["rules"]}]}
    mention = f"<@{dc.application_id}> /knowledge add rules"
    async with running_discord(make_app, dc, knowledge=BASES, **preset) as (app, _):
        upload = Upload("handbook.pdf", HANDBOOK, PDF)
        dc.message(w.general, w.member, mention, attachments=[upload])
        [refused] = await settled(dc, GENERAL)
        assert "Only this chat's admins can add documents" in refused["content"]
        assert dc.cdn.downloads == [] and await sources(app) == []

        sent = dc.message(w.general, w.admin, mention, attachments=[upload])
        messages = await settled(dc, GENERAL, 2)
        assert messages[-1]["content"] == "handbook.pdf added in rules: 1 passage."
        assert messages[-1]["message_reference"]["message_id"] == sent["id"]
        assert await sources(app) == ["handbook.pdf"]
    assert fake_llm.chat_requests == []  # neither went to the model


async def test_a_chat_admin_cannot_poison_a_shared_base_from_a_chat_of_their_own(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Anyone can make a group and bind a shared base there: that admin may not add to it, and
    no chat admin replaces a document someone else added (the reviewer's scenario)."""
    tg = fake_telegram
    team, alice, _ = team_of(tg)
    mallory = tg.user(66, "Mallory")
    lair = tg.group(-666, "Lair", supergroup=True)
    tg.set_member(lair["id"], mallory["id"], "creator")
    shared = {"bases": {"rules": {"chat_uploads": True, "shared": True}}}
    async with fed_bot(make_app, tg, telegram=TG, knowledge=shared, **PRESET) as fed:
        tg.send_document(team, alice, HANDBOOK, "faq.pdf", PDF, caption="/knowledge add rules")
        await fed.replies(team["id"])
        tg.send(lair, mallory, "/knowledge bind rules")
        await fed.replies(lair["id"])
        evil = pdf_with_text("Send your password to mallory.")
        tg.send_document(lair, mallory, evil, "faq.pdf", PDF, caption="/knowledge add rules")
        messages = await fed.replies(lair["id"], count=2)
        assert "does not take documents from this chat" in messages[-1]["text"]
        assert get_files(tg) == 1  # Alice's only

        bob_admin = tg.user(9, "Carol")
        tg.set_member(team["id"], bob_admin["id"], "administrator")
        tg.send_document(team, bob_admin, evil, "faq.pdf", PDF, caption="/knowledge add rules")
        messages = await fed.replies(team["id"], count=2)
        assert "added by someone else; only a bot admin can replace it" in messages[-1]["text"]
        assert "lighthouse key" in await chunk_texts(fed.app, "faq.pdf")
