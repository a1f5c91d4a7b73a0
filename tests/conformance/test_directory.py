"""The chat directory (bot.storage.directory): chats from turns, titles, history pages."""

from __future__ import annotations

from bot.storage import Storage
from bot.storage.directory import ChatEntry
from bot.values import TurnStatus, Usage
from tests.conformance.conftest import answered, turn


def group(chat_id: str, title: str) -> ChatEntry:
    return ChatEntry("tg", chat_id, "group", title)


async def test_chats_come_from_turns_newest_activity_first(storage: Storage) -> None:
    assert await storage.list_chats() == []
    await answered(storage, "tg:1", "one", "a")
    await answered(storage, "tg:2:u:5", "two", "b", chat="tg:2")
    await answered(storage, "tg:2:u:6", "three", "c", chat="tg:2")
    await storage.begin_turn(turn("tg:1", "pending"))  # pending counts, and is the newest
    await storage.note_chat(ChatEntry("tg", "3", "group", "No turns yet"))
    chats = await storage.list_chats()
    assert [(c.chat_key, c.platform, c.chat_id, c.turns) for c in chats] == [
        ("tg:1", "tg", "1", 2),
        ("tg:2", "tg", "2", 2),
    ]
    assert chats[0].last_activity >= chats[1].last_activity > 0
    assert (chats[0].title, chats[0].chat_type) == ("", "")  # never noted
    assert await storage.chat_summary("tg:1") == chats[0]
    assert await storage.chat_summary("tg:3") is None  # noted, but no turns
    assert await storage.chat_summary("tg:9") is None


async def test_context_turns_are_not_counted(storage: Storage) -> None:
    await storage.record_overheard(turn("tg:-1", "chatter", user="2"), keep=10)
    heard = await storage.load_overheard("tg:-1", 0)
    await storage.begin_turn(turn("tg:-1", "bot?", overheard=(heard[0].overheard_id,)))
    summary = await storage.chat_summary("tg:-1")
    assert summary is not None and summary.turns == 1
    page = await storage.history_page("tg:-1")
    assert [(item.text, item.status) for item in page] == [("bot?", TurnStatus.PENDING)]


async def test_note_chat_upserts_last_title_and_type_win(storage: Storage) -> None:
    await answered(storage, "tg:1", "hi", "hello")
    await storage.note_chat(group("1", "Book club"))
    await storage.note_chat(ChatEntry("tg", "1", "channel", "Book Club Ünïcode"))
    chats = await storage.list_chats()
    assert [(c.title, c.chat_type) for c in chats] == [("Book Club Ünïcode", "channel")]


async def test_query_matches_title_or_key_case_insensitively(storage: Storage) -> None:
    await answered(storage, "tg:100", "hi", "a")
    await answered(storage, "tg:200", "hi", "b")
    await answered(storage, "dc:300", "hi", "c")
    await storage.note_chat(group("100", "Ölfreunde Berlin"))
    await storage.note_chat(group("200", "Chess"))
    assert [c.chat_key for c in await storage.list_chats("öLFREUNDE")] == ["tg:100"]
    assert [c.chat_key for c in await storage.list_chats("CHESS")] == ["tg:200"]
    assert [c.chat_key for c in await storage.list_chats("dc:")] == ["dc:300"]
    assert {c.chat_key for c in await storage.list_chats("00")} == {"tg:100", "tg:200", "dc:300"}
    assert await storage.list_chats("nothing like it") == []
    assert await storage.list_chats("%") == []  # no wildcards
    assert await storage.list_chats("_") == []


async def test_list_chats_pages_with_limit_and_offset(storage: Storage) -> None:
    for n in range(5):
        await answered(storage, f"tg:{n}", "hi", "a")
    everything = [c.chat_key for c in await storage.list_chats()]
    assert len(everything) == 5
    first = [c.chat_key for c in await storage.list_chats(limit=2)]
    second = [c.chat_key for c in await storage.list_chats(limit=2, offset=2)]
    rest = [c.chat_key for c in await storage.list_chats(limit=2, offset=4)]
    assert first + second + rest == everything
    assert await storage.list_chats(offset=5) == []


async def test_history_pages_newest_first_with_before(storage: Storage) -> None:
    ids = []
    for n in range(5):
        conv = "tg:-5" if n % 2 else "tg:-5:u:7"  # every conversation of the chat
        ids.append(await answered(storage, conv, f"q{n}", f"a{n}", chat="tg:-5"))
    await answered(storage, "tg:-6", "other chat", "x")
    first = await storage.history_page("tg:-5", limit=2)
    assert [(i.turn_id, i.text, i.answer) for i in first] == [
        (ids[4], "q4", "a4"),
        (ids[3], "q3", "a3"),
    ]
    assert first[0].conversation_key == "tg:-5:u:7" and first[1].conversation_key == "tg:-5"
    assert (first[0].user_id, first[0].user_name) == ("u1", "name-u1")
    assert first[0].status is TurnStatus.ANSWERED and first[0].created_at > 0
    second = await storage.history_page("tg:-5", before=first[-1].turn_id, limit=2)
    assert [i.turn_id for i in second] == [ids[2], ids[1]]
    last = await storage.history_page("tg:-5", before=second[-1].turn_id, limit=2)
    assert [i.turn_id for i in last] == [ids[0]]
    assert await storage.history_page("tg:-5", before=ids[0]) == []
    assert await storage.history_page("tg:-404") == []


async def test_history_answer_is_the_final_assistant_text(storage: Storage) -> None:
    turn_id = await storage.begin_turn(turn("tg:1", "weather?"))
    call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
    await storage.complete_turn(
        turn_id,
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ],
        Usage(1, 1),
        "m",
    )
    failed = await storage.begin_turn(turn("tg:1", "again?"))
    await storage.fail_turn(failed, "llm_error")
    page = await storage.history_page("tg:1")
    assert [(i.text, i.answer, i.status) for i in page] == [
        ("again?", "", TurnStatus.UNANSWERED),
        ("weather?", "It is sunny.", TurnStatus.ANSWERED),
    ]


async def test_a_cleared_chat_leaves_the_list_and_its_pages(storage: Storage) -> None:
    await answered(storage, "tg:1", "hi", "a")
    await answered(storage, "tg:2", "hi", "b")
    await storage.note_chat(group("1", "Gone soon"))
    await storage.clear_chat("tg:1", "ops", "http:ops")
    assert [c.chat_key for c in await storage.list_chats()] == ["tg:2"]
    assert await storage.chat_summary("tg:1") is None
    assert await storage.history_page("tg:1") == []
    await answered(storage, "tg:1", "back", "again")  # the entry is kept for its return
    assert [c.title for c in await storage.list_chats("gone")] == ["Gone soon"]


async def test_an_erased_person_leaves_no_turns_and_no_private_title(storage: Storage) -> None:
    await answered(storage, "tg:7:u:7", "my secret", "ok", chat="tg:7")
    await storage.note_chat(ChatEntry("tg", "7", "private", "Erin Example"))
    await answered(storage, "tg:-1", "group hi", "hey", chat="tg:-1")
    await storage.note_chat(group("-1", "The group"))
    mine = await storage.begin_turn(turn("tg:-1", "mine in the group", user="7"))
    await storage.fail_turn(mine, "llm_error")
    await storage.delete_user("tg", "7")
    assert [(c.chat_key, c.title, c.turns) for c in await storage.list_chats()] == [
        ("tg:-1", "The group", 1)
    ]
    assert [i.text for i in await storage.history_page("tg:-1")] == ["group hi"]
    assert await storage.history_page("tg:7") == []
    await answered(storage, "tg:7:u:7", "new start", "hi", chat="tg:7")
    assert [c.title for c in await storage.list_chats("tg:7")] == [""]  # the name went


async def test_chat_conversations_are_every_conversation_of_the_chat(storage: Storage) -> None:
    await answered(storage, "tg:-1:u:7", "a", "b", chat="tg:-1")
    await answered(storage, "tg:-1", "c", "d")
    await answered(storage, "tg:-12", "other chat", "e")
    await storage.record_overheard(turn("tg:-1:t:9", "chatter", chat="tg:-1", user="2"), keep=5)
    assert await storage.chat_conversations("tg:-1") == ["tg:-1", "tg:-1:t:9", "tg:-1:u:7"]
    assert await storage.chat_conversations("tg:-404") == []
