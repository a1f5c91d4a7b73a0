"""Turns and windows (bot.storage.turns): durability, order, one transaction per step, O(window)."""

from __future__ import annotations

import asyncio
import time

from bot.storage import Storage
from bot.values import BurstMessage, TurnStatus, Usage
from tests.conformance.conftest import TEN_TWO, Backend, answered, turn


async def test_history_survives_reopen(backend: Backend) -> None:
    async with backend.open() as store:
        await answered(store, "tg:1", "hello", "hi there")
    async with backend.open() as store:
        window = await store.load_window("tg:1", 10)
    assert [m["content"] for t in window for m in t.messages] == ["hello", "hi there"]
    assert window[0].status is TurnStatus.ANSWERED


async def test_tool_calls_round_trip(storage: Storage) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    turn_id = await storage.begin_turn(turn())
    await storage.complete_turn(
        turn_id,
        [
            {"role": "assistant", "content": None, "tool_calls": calls, "refusal": None},
            {"role": "tool", "tool_call_id": "c1", "content": "42", "name": None},
            {"role": "assistant", "content": "it is 42"},
        ],
        Usage(),
        "m",
    )
    (stored,) = await storage.load_window("tg:1", 5)
    assert stored.messages[1] == {"role": "assistant", "content": None, "tool_calls": calls}
    assert stored.messages[2] == {"role": "tool", "content": "42", "tool_call_id": "c1"}


async def test_window_is_newest_turns_oldest_first(storage: Storage) -> None:
    for i in range(30):
        await answered(storage, "tg:1", f"q{i}", f"a{i}")
    await answered(storage, "tg:2", "other chat", "x")
    window = await storage.load_window("tg:1", 5)
    assert [t.messages[0]["content"] for t in window] == ["q25", "q26", "q27", "q28", "q29"]


async def test_failed_turn_keeps_user_message(storage: Storage) -> None:
    turn_id = await storage.begin_turn(turn(text="lost?"))
    await storage.fail_turn(turn_id, "LLMUnavailableError")
    await storage.fail_turn(turn_id, "twice")  # no longer pending: no-op
    (stored,) = await storage.load_window("tg:1", 5)
    stats = await storage.stats("tg:1")
    assert stored.status is TurnStatus.UNANSWERED
    assert stored.messages == ({"role": "user", "content": "lost?"},)
    assert stats.unanswered == 1


async def test_concurrent_writers_never_share_a_transaction(storage: Storage) -> None:
    ids = await asyncio.gather(
        *(answered(storage, f"tg:{i % 7}", f"q{i}", f"a{i}") for i in range(200))
    )
    windows = [await storage.load_window(f"tg:{i}", 100) for i in range(7)]
    assert len(set(ids)) == 200
    for window in windows:
        for t in window:
            assert [m["role"] for m in t.messages] == ["user", "assistant"]
            assert t.messages[0]["content"][1:] == t.messages[1]["content"][1:]


async def test_answers_stored_at_once_each_land_whole_with_their_tokens(storage: Storage) -> None:
    ids = await asyncio.gather(*(storage.begin_turn(turn(f"tg:{i}", f"q{i}")) for i in range(30)))
    await asyncio.gather(
        *(
            storage.complete_turn(turn_id, [{"role": "assistant", "content": f"a{i}"}],
                                  Usage(i, 1), f"model-{i}")
            for i, turn_id in enumerate(ids)
        )
    )  # fmt: skip
    for i, turn_id in enumerate(ids):
        (stored,) = await storage.load_window(f"tg:{i}", 10)
        assert stored.turn_id == turn_id and stored.status is TurnStatus.ANSWERED
        assert [m["content"] for m in stored.messages] == [f"q{i}", f"a{i}"]
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert await storage.tokens_on(day) == sum(range(30)) + 30
    assert await storage.tokens_on(day, chat_key="tg:7") == 8


async def test_turns_begun_at_once_each_get_their_own_row_in_the_order_begun(
    storage: Storage,
) -> None:
    ids = await asyncio.gather(*(storage.begin_turn(turn(f"tg:{i}", f"q{i}")) for i in range(30)))
    assert ids == sorted(ids) and len(set(ids)) == 30
    for i, turn_id in enumerate(ids):
        (stored,) = await storage.load_window(f"tg:{i}", 10)
        assert (stored.turn_id, stored.messages[0]["content"]) == (turn_id, f"q{i}")


async def test_a_turn_is_written_in_one_transaction(backend: Backend) -> None:
    """A reader (here: another instance, as another process would) sees a turn's answer
    whole or not at all."""
    answer = [
        {"role": "assistant", "content": None, "tool_calls": [_call(i)]} for i in range(5)
    ] + [{"role": "assistant", "content": "done"}]
    async with backend.open() as writer, backend.open(cache_windows=False) as reader:
        seen: set[int] = set()
        stop = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                for t in await reader.load_window("tg:1", 50):
                    seen.add(len(t.messages))
                await asyncio.sleep(0)

        watcher = asyncio.ensure_future(watch())
        for i in range(20):
            turn_id = await writer.begin_turn(turn(text=f"q{i}"))
            await writer.complete_turn(turn_id, answer, Usage(1, 1), "m")
        stop.set()
        await watcher
    assert seen <= {1, 1 + len(answer)}


async def test_one_conversation_keeps_arrival_order(storage: Storage) -> None:
    """Ids grow in the order begin_turn returns, whatever completes first."""
    first = await storage.begin_turn(turn(text="first"))
    second = await storage.begin_turn(turn(text="second"))
    await storage.complete_turn(second, [{"role": "assistant", "content": "2"}], Usage(), "m")
    await storage.complete_turn(first, [{"role": "assistant", "content": "1"}], Usage(), "m")
    third = await storage.begin_turn(turn(text="third"))
    assert first < second < third
    window = await storage.load_window("tg:1", 10)
    assert [t.messages[0]["content"] for t in window] == ["first", "second", "third"]
    assert [t.messages[-1]["content"] for t in window] == ["1", "2", "third"]


async def test_window_costs_the_window_not_the_history(backend: Backend) -> None:
    async with backend.open(cache_windows=False) as store:
        for i in range(40):
            await answered(store, "tg:short", f"q{i}", "a")
        for i in range(2000):
            await answered(store, "tg:long", f"q{i}", "a", usage=Usage())

        async def best_of(key: str) -> float:
            times = []
            for _ in range(15):
                start = time.perf_counter()
                assert len(await store.load_window(key, 10)) == 10
                times.append(time.perf_counter() - start)
            return min(times)

        short, long = await best_of("tg:short"), await best_of("tg:long")
    assert long < short * 5 + 0.002, (short, long)  # 100 times the history, about the same cost


async def test_window_sees_another_instance_writes(backend: Backend) -> None:
    async with backend.open() as mine, backend.open() as other:
        await answered(mine, "tg:1", "from me", "a")
        assert len(await mine.load_window("tg:1", 10)) == 1  # now maybe cached
        await answered(other, "tg:1", "from the other process", "b")
        window = await mine.load_window("tg:1", 10)
        assert [t.messages[0]["content"] for t in window] == ["from me", "from the other process"]
        await other.reset("tg:1", "tg:1", "u")
        assert await mine.load_window("tg:1", 10) == []


async def test_window_follows_own_writes(storage: Storage) -> None:
    await answered(storage, "tg:1", "one", "1")
    assert len(await storage.load_window("tg:1", 2)) == 1
    pending = await storage.begin_turn(turn("tg:1", "two"))
    (_, second) = await storage.load_window("tg:1", 2)
    assert second.status is TurnStatus.PENDING
    await storage.fail_turn(pending, "x")
    await answered(storage, "tg:1", "three", "3")
    window = await storage.load_window("tg:1", 2)
    assert [(t.messages[0]["content"], t.status) for t in window] == [
        ("two", TurnStatus.UNANSWERED),
        ("three", TurnStatus.ANSWERED),
    ]
    assert window[1].messages[1] == {"role": "assistant", "content": "3"}
    assert len(await storage.load_window("tg:1", 50)) == 3  # a larger window
    await storage.clear_chat("tg:1", "a", "A")
    assert await storage.load_window("tg:1", 2) == []


async def test_an_undelivered_answer_is_kept_but_not_counted_answered(storage: Storage) -> None:
    delivered = await answered(storage, "tg:1", "first", "got it")
    lost = await answered(storage, "tg:1", "second", "never arrived")
    pending = await storage.begin_turn(turn("tg:1", "third"))
    assert await storage.mark_undelivered(lost, "TelegramRetryAfter: flood") is True
    assert await storage.mark_undelivered(lost, "again") is False  # once
    assert await storage.mark_undelivered(pending, "x") is False  # never answered
    assert await storage.mark_undelivered(10**9, "x") is False  # gone
    stats = await storage.stats("tg:1")
    window = await storage.load_window("tg:1", 10)
    exported = [r async for r in storage.export("tg:1")]
    [usage] = await storage.daily_usage("1970-01-01")
    assert (stats.turns_stored, stats.unanswered, stats.undelivered) == (3, 0, 1)
    assert [t.status for t in window] == [
        TurnStatus.ANSWERED,
        TurnStatus.UNDELIVERED,
        TurnStatus.PENDING,
    ]
    # The model still sees what it said (and which tools it ran) the next time.
    assert window[1].messages[-1]["content"] == "never arrived"
    assert [(r["turn"], r["status"]) for r in exported if r["role"] == "assistant"] == [
        (delivered, "answered"),
        (lost, "undelivered"),
    ]
    assert usage.turns == 1  # answered turns; the tokens of both stay booked
    assert usage.usage == Usage(20, 4)


async def test_export_and_discovery(storage: Storage) -> None:
    first = await answered(storage, "tg:1", "hello", "hi")
    await answered(storage, "tg:0", "other", "x")
    await answered(storage, "tg:0:u:5", "theirs", "y", chat="tg:0")
    records = [r async for r in storage.export("tg:1")]
    [theirs, _] = [r async for r in storage.export("tg:0:u:5")]
    assert {r["chat"] for r in records} == {"tg:1"} and theirs["chat"] == "tg:0"
    assert [(r["turn"], r["seq"], r["role"], r["content"]) for r in records] == [
        (first, 0, "user", "hello"),
        (first, 1, "assistant", "hi"),
    ]
    assert (records[0]["user_id"], records[0]["user_name"]) == ("u1", "name-u1")
    assert "user_id" not in records[1]
    assert records[0]["status"] == "answered"
    assert await storage.conversations() == [("tg:0", 1), ("tg:0:u:5", 1), ("tg:1", 1)]
    assert await storage.turn_exists(first)
    assert not await storage.turn_exists(first + 100)


def _call(i: int) -> dict[str, object]:
    return {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}


async def test_a_burst_is_stored_message_by_message_before_its_turn(storage: Storage) -> None:
    """``NewTurn.burst``: the sender's earlier messages of a burst land as context rows right
    before the turn that answers them, after the chatter it moves in, in one transaction."""
    await answered(storage, "tg:-1", "before", "ok")
    await storage.record_overheard(turn("tg:-1", "chatter", user="u2"), keep=10)
    [heard] = await storage.load_overheard("tg:-1", 0)
    burst = (BurstMessage("hey", "m1", time.time()), BurstMessage("can you", "m2", time.time()))
    turn_id = await storage.begin_turn(
        turn(
            "tg:-1",
            "summarise this",
            platform_message_id="m3",
            overheard=(heard.overheard_id,),
            burst=burst,
        )
    )
    await storage.complete_turn(turn_id, [{"role": "assistant", "content": "done"}], TEN_TWO, "m")
    window = await storage.load_window("tg:-1", 10)
    assert [(t.user_id, t.status, t.messages[0]["content"]) for t in window] == [
        ("u1", TurnStatus.ANSWERED, "before"),
        ("u2", TurnStatus.CONTEXT, "chatter"),
        ("u1", TurnStatus.CONTEXT, "hey"),
        ("u1", TurnStatus.CONTEXT, "can you"),
        ("u1", TurnStatus.ANSWERED, "summarise this"),
    ]
    assert window[-1].turn_id == turn_id and window[2].user_name == "name-u1"
    stats = await storage.stats("tg:-1")
    assert stats.turns_stored == 2  # the burst's messages are context rows, not turns
    # without chatter too
    burst_only = await storage.begin_turn(turn("tg:-2", "b", burst=(BurstMessage("a", None, 1.0),)))
    assert [t.messages[0]["content"] for t in await storage.load_window("tg:-2", 5)] == ["a", "b"]
    assert (await storage.load_window("tg:-2", 5))[-1].turn_id == burst_only
