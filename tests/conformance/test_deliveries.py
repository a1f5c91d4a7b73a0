"""Delivery records (bot.storage.deliveries) and the adapter's view of them (DeliveryLog)."""

from __future__ import annotations

import asyncio

from bot.platform.delivery_log import DeliveryLog
from bot.storage import Storage
from bot.storage.deliveries import MAX_SHOWN_CHARS
from tests.conformance.conftest import Backend, answered


async def test_a_record_follows_its_reply(storage: Storage) -> None:
    log = DeliveryLog(storage)
    first = await log.begin("tg", "tg:1", "1", reply_to="55")
    second = await log.begin("tg", "tg:2", "2", thread_id="9")
    await log.begin("dc", "dc:1", "1")
    await log.showing(first, "77", "partial answer")
    turn_id = await answered(storage, "tg:1", "q", "a")
    await log.answered(first, turn_id)
    await log.showing(first, "78", "x" * (MAX_SHOWN_CHARS + 10))
    records = {d.delivery_id: d for d in await storage.deliveries("tg")}
    assert set(records) == {first, second}
    one = records[first]
    assert (one.platform, one.chat_key, one.chat_id, one.thread_id, one.reply_to) == (
        "tg",
        "tg:1",
        "1",
        None,
        "55",
    )
    assert (one.message_id, len(one.shown), one.turn_id) == ("78", MAX_SHOWN_CHARS, turn_id)
    assert one.owner == storage.owner and one.created_at > 0
    two = records[second]
    assert (two.thread_id, two.message_id, two.shown, two.turn_id) == ("9", None, "", None)
    await log.done(first)
    assert [d.delivery_id for d in await storage.deliveries("tg")] == [second]
    assert await log.undelivered(turn_id, "refused") is True


async def test_records_of_replies_at_once_each_keep_their_own_fields(storage: Storage) -> None:
    # A burst: replies begin, show, end at about the same moment (one record shown twice).
    chats = range(12)
    ids = await asyncio.gather(*(storage.begin_delivery("tg", f"tg:{n}", str(n), None, None)
                                 for n in chats))  # fmt: skip
    assert ids == sorted(ids) and len(set(ids)) == 12
    await asyncio.gather(
        *(storage.update_delivery(ids[n], message_id=f"m{n}", shown=f"s{n}") for n in chats),
        storage.update_delivery(ids[0], turn_id=7),
    )
    await asyncio.gather(*(storage.end_delivery(ids[n]) for n in chats if n % 2))
    records = await storage.deliveries("tg")
    assert [d.delivery_id for d in records] == [ids[n] for n in chats if n % 2 == 0]
    for record, n in zip(records, range(0, 12, 2), strict=True):
        assert (record.chat_key, record.message_id, record.shown) == (f"tg:{n}", f"m{n}", f"s{n}")
    assert [d.turn_id for d in records] == [7] + [None] * 5


async def test_orphans_are_the_records_of_gone_processes(backend: Backend) -> None:
    async with backend.open() as dead:
        gone = await DeliveryLog(dead).begin("tg", "tg:1", "1")
    async with backend.open() as store:
        log = DeliveryLog(store)
        mine = await log.begin("tg", "tg:1", "1")
        assert [d.delivery_id for d in await log.orphans("tg")] == [gone]
        assert await log.orphans("dc") == []
        assert [d.delivery_id for d in await store.deliveries("tg")] == [gone, mine]


async def test_forgotten_with_the_chat_and_by_retention(storage: Storage) -> None:
    await storage.begin_delivery("tg", "tg:1", "1", None, None)
    await storage.begin_delivery("tg", "tg:2", "2", None, None)
    await storage.clear_chat("tg:1", "a", "A")
    assert [d.chat_key for d in await storage.deliveries("tg")] == ["tg:2"]
    await storage.delete_older_than(-1)
    assert await storage.deliveries("tg") == []


async def test_updates_change_only_the_fields_given(storage: Storage) -> None:
    delivery = await storage.begin_delivery("tg", "tg:1", "1", "4", "55")
    await storage.update_delivery(delivery, message_id="77", shown="hello")
    await storage.update_delivery(delivery, turn_id=9)
    [record] = await storage.deliveries("tg")
    assert (record.message_id, record.shown, record.turn_id, record.thread_id) == (
        "77",
        "hello",
        9,
        "4",
    )
    await storage.end_delivery(delivery)
    await storage.end_delivery(delivery)  # twice: no error
    assert await storage.deliveries("tg") == []
