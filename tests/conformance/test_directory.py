"""The chat directory (bot.storage.directory): chats from turns, entries and the audit, titles,
history pages with their tool calls."""

from __future__ import annotations

import asyncio

from bot.storage import Storage
from bot.values import AuditAction, ChatEntry, ToolStep, TurnStatus, Usage
from tests.conformance.conftest import answered, turn


def group(chat_id: str, title: str) -> ChatEntry:
    return ChatEntry("tg", chat_id, "group", title)


async def test_chats_come_from_turns_newest_activity_first(storage: Storage) -> None:
    assert await storage.list_chats() == []
    await answered(storage, "tg:1", "one", "a")
    await answered(storage, "tg:2:u:5", "two", "b", chat="tg:2")
    await answered(storage, "tg:2:u:6", "three", "c", chat="tg:2")
    await storage.begin_turn(turn("tg:1", "pending"))  # pending counts, and is the newest
    chats = await storage.list_chats()
    assert [(c.chat_key, c.platform, c.chat_id, c.turns) for c in chats] == [
        ("tg:1", "tg", "1", 2),
        ("tg:2", "tg", "2", 2),
    ]
    assert chats[0].last_activity >= chats[1].last_activity > 0
    assert (chats[0].title, chats[0].chat_type) == ("", "")  # never noted
    assert await storage.chat_summary("tg:1") == chats[0]
    assert await storage.chat_summary("tg:9") is None


async def test_chats_known_by_their_entry_or_audit_are_listed_without_turns(
    storage: Storage,
) -> None:
    await answered(storage, "tg:1", "one", "a")
    await storage.note_chat(ChatEntry("tg", "3", "group", "No turns yet"))
    await storage.record_change("tg:4", "7", "Ann", AuditAction.SCOPE, "chat -> user")
    chats = await storage.list_chats()
    assert [(c.chat_key, c.title, c.chat_type, c.turns) for c in chats] == [
        ("tg:4", "", "", 0),  # its audit entry is the newest activity
        ("tg:1", "", "", 1),
        ("tg:3", "No turns yet", "group", 0),  # no activity stored: last
    ]
    assert chats[0].last_activity >= chats[1].last_activity > chats[2].last_activity == 0
    assert await storage.chat_summary("tg:3") == chats[2]
    assert await storage.chat_summary("tg:4") == chats[0]
    assert [c.chat_key for c in await storage.list_chats("no turns")] == ["tg:3"]
    assert [c.chat_key for c in await storage.list_chats(offset=2)] == ["tg:3"]


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


async def test_notes_made_at_once_each_land_and_a_chat_noted_twice_keeps_the_last(
    storage: Storage,
) -> None:
    notes = [ChatEntry("tg", str(i), "group", f"Chat {i}") for i in range(20)]
    notes.insert(10, ChatEntry("tg", "3", "private", "renamed"))  # after the first note of 3
    await asyncio.gather(*(storage.note_chat(note) for note in notes))
    chats = {c.chat_key: (c.chat_type, c.title) for c in await storage.list_chats(limit=100)}
    assert len(chats) == 20
    assert chats["tg:3"] == ("private", "renamed")
    assert chats["tg:12"] == ("group", "Chat 12")


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
    assert page[1].tools == (ToolStep("w", "{}", "sunny"),) and page[0].tools == ()


async def test_history_items_carry_their_tool_calls_in_order(storage: Storage) -> None:
    turn_id = await storage.begin_turn(turn("tg:1", "plan my day"))

    def call(call_id: str, name: str, arguments: str) -> dict[str, object]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    await storage.complete_turn(
        turn_id,
        [
            {
                "role": "assistant",
                "content": "Looking.",
                "tool_calls": [
                    call("a", "weather", '{"city": "Lisbon"}'),
                    call("b", "agenda", "{}"),
                ],
            },
            {"role": "tool", "tool_call_id": "b", "content": "standup 10:30"},  # any order
            {"role": "tool", "tool_call_id": "a", "content": "18°C, <b>sunny</b>"},
            {"role": "assistant", "content": None, "tool_calls": [call("c", "remind", "{}")]},
            {"role": "assistant", "content": "**Done**: a light jacket."},  # "c" never answered
        ],
        Usage(1, 1),
        "m",
    )
    [item] = await storage.history_page("tg:1")
    assert item.answer == "**Done**: a light jacket."
    assert item.tools == (
        ToolStep("weather", '{"city": "Lisbon"}', "18°C, <b>sunny</b>"),
        ToolStep("agenda", "{}", "standup 10:30"),
        ToolStep("remind", "{}", ""),
    )


async def test_a_cleared_chat_stays_listed_with_its_title_and_no_turns(storage: Storage) -> None:
    await answered(storage, "tg:1", "hi", "a")
    await answered(storage, "tg:2", "hi", "b")
    await storage.note_chat(group("1", "Cleared soon"))
    await storage.clear_chat("tg:1", "ops", "http:ops")
    chats = await storage.list_chats()
    assert [(c.chat_key, c.title, c.chat_type, c.turns) for c in chats] == [
        ("tg:1", "Cleared soon", "group", 0),  # the clear is its newest activity
        ("tg:2", "", "", 1),
    ]
    assert await storage.chat_summary("tg:1") == chats[0]
    assert await storage.history_page("tg:1") == []
    await answered(storage, "tg:1", "back", "again")
    assert [(c.title, c.turns) for c in await storage.list_chats("cleared")] == [
        ("Cleared soon", 1)
    ]


async def test_a_chat_cleared_without_an_entry_is_listed_by_its_audit(storage: Storage) -> None:
    await answered(storage, "tg:5", "hi", "a")
    await storage.clear_chat("tg:5", "7", "Ann")
    summary = await storage.chat_summary("tg:5")
    assert summary is not None and (summary.title, summary.turns) == ("", 0)
    assert summary.last_activity > 0


async def test_a_migrated_chat_takes_its_entry_to_the_new_key(storage: Storage) -> None:
    await answered(storage, "tg:-1", "hi", "a")
    await storage.note_chat(group("-1", "Old group"))
    await storage.note_chat(group("-2", "Its neighbour"))
    await storage.migrate_chat("tg:-1", "tg:-100")
    chats = await storage.list_chats()
    assert [(c.chat_key, c.chat_id, c.title, c.turns) for c in chats] == [
        ("tg:-100", "-100", "Old group", 1),
        ("tg:-2", "-2", "Its neighbour", 0),
    ]
    assert await storage.chat_summary("tg:-1") is None
    await storage.note_chat(group("-300", "Has its own"))  # a new chat's own entry wins
    await storage.note_chat(group("-3", "Older name"))
    await storage.migrate_chat("tg:-3", "tg:-300")
    assert [c.title for c in await storage.list_chats("tg:-3")] == ["Has its own"]


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


async def test_an_erased_persons_cleared_private_chat_keeps_its_audit_not_their_name(
    storage: Storage,
) -> None:
    await answered(storage, "tg:8:u:8", "hello", "hi", chat="tg:8")
    await storage.note_chat(ChatEntry("tg", "8", "private", "Erin Example"))
    await storage.clear_chat("tg:8", "8", "Erin Example")  # /clear in their own chat
    await storage.delete_user("tg", "8")
    [chat] = await storage.list_chats()
    assert (chat.chat_key, chat.title, chat.chat_type, chat.turns) == ("tg:8", "", "", 0)
    assert await storage.list_chats("erin") == []


async def test_chat_conversations_are_every_conversation_of_the_chat(storage: Storage) -> None:
    await answered(storage, "tg:-1:u:7", "a", "b", chat="tg:-1")
    await answered(storage, "tg:-1", "c", "d")
    await answered(storage, "tg:-12", "other chat", "e")
    await storage.record_overheard(turn("tg:-1:t:9", "chatter", chat="tg:-1", user="2"), keep=5)
    assert await storage.chat_conversations("tg:-1") == ["tg:-1", "tg:-1:t:9", "tg:-1:u:7"]
    assert await storage.chat_conversations("tg:-404") == []
