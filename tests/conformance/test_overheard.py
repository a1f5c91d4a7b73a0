"""Overheard chatter (bot.storage.overheard) and how it joins a turn (bot.storage.turns)."""

from __future__ import annotations

import time

from bot.storage import Storage
from bot.values import TurnStatus
from tests.conformance.conftest import Backend, answered, turn


async def test_only_the_newest_are_kept(storage: Storage) -> None:
    for n in range(5):
        await storage.record_overheard(turn("tg:-1", f"chatter {n}", user="2"), keep=3)
    await storage.record_overheard(turn("tg:-2", "elsewhere", user="2"), keep=3)
    kept = await storage.load_overheard("tg:-1", 0)
    assert [o.text for o in kept] == ["chatter 2", "chatter 3", "chatter 4"]
    assert [o.overheard_id for o in kept] == sorted(o.overheard_id for o in kept)
    assert (kept[0].user_id, kept[0].user_name) == ("2", "name-2")
    assert await storage.load_overheard("tg:-1", time.time() + 60) == []


async def test_chosen_chatter_joins_the_turn_as_context(storage: Storage) -> None:
    earlier = await answered(storage, "tg:-1", "earlier", "yes")
    for n in range(4):
        await storage.record_overheard(turn("tg:-1", f"chatter {n}", user="2"), keep=10)
    waiting = await storage.load_overheard("tg:-1", 0)
    chosen = tuple(o.overheard_id for o in waiting[1:3])
    turn_id = await storage.begin_turn(turn("tg:-1", "so what do you think?", overheard=chosen))
    window = await storage.load_window("tg:-1", 2)  # context rows do not count toward max_turns
    assert [(t.status, t.messages[0]["content"]) for t in window] == [
        (TurnStatus.ANSWERED, "earlier"),
        (TurnStatus.CONTEXT, "chatter 1"),
        (TurnStatus.CONTEXT, "chatter 2"),
        (TurnStatus.PENDING, "so what do you think?"),
    ]
    assert (window[0].turn_id, window[-1].turn_id) == (earlier, turn_id)
    assert [t.status for t in await storage.load_window("tg:-1", 1)] == [TurnStatus.PENDING]
    # Older or superseded chatter is gone; what came after the chosen ones still waits.
    assert [o.text for o in await storage.load_overheard("tg:-1", 0)] == ["chatter 3"]
    stats = await storage.stats("tg:-1")
    assert stats.turns_stored == 2  # context rows are not turns of the conversation


async def test_retention_drops_old_chatter(storage: Storage) -> None:
    await storage.record_overheard(turn("tg:-1", "old", user="2"), keep=10)
    await storage.delete_older_than(-1)
    assert await storage.load_overheard("tg:-1", 0) == []


async def test_an_edited_message_is_replaced_where_it_waits(storage: Storage) -> None:
    for n in range(3):
        message = turn("tg:-1", f"chatter {n}", user="2", platform_message_id=str(10 + n))
        await storage.record_overheard(message, keep=10)
    before = await storage.load_overheard("tg:-1", 0)
    assert await storage.replace_overheard("tg:-1", "11", "chatter one, edited")
    after = await storage.load_overheard("tg:-1", 0)
    assert [o.text for o in after] == ["chatter 0", "chatter one, edited", "chatter 2"]
    # Same row: its place in the queue, author and time are kept.
    assert [(o.overheard_id, o.user_id, o.created_at) for o in after] == [
        (o.overheard_id, o.user_id, o.created_at) for o in before
    ]
    assert not await storage.replace_overheard("tg:-1", "99", "never kept")
    assert not await storage.replace_overheard("tg:-2", "11", "another conversation")
    assert [o.text for o in await storage.load_overheard("tg:-1", 0)] == [o.text for o in after]


async def test_chatter_that_joined_a_turn_is_not_rewritten(storage: Storage) -> None:
    await storage.record_overheard(
        turn("tg:-1", "before", user="2", platform_message_id="7"), keep=10
    )
    (waiting,) = await storage.load_overheard("tg:-1", 0)
    await storage.begin_turn(turn("tg:-1", "answer me", overheard=(waiting.overheard_id,)))
    assert not await storage.replace_overheard("tg:-1", "7", "after")
    window = await storage.load_window("tg:-1", 5)
    assert [t.messages[0]["content"] for t in window] == ["before", "answer me"]


async def test_read_again_after_every_change_here_or_elsewhere(backend: Backend) -> None:
    """Each change shows in the next read, whoever made it (here: another instance, as another
    process would), read just before it or not."""

    async def texts(store: Storage, since: float = 0) -> list[str]:
        return [o.text for o in await store.load_overheard("tg:-1", since)]

    async with backend.open() as mine, backend.open() as other:
        assert await texts(mine) == []
        await other.record_overheard(turn("tg:-1", "from elsewhere", user="2"), keep=10)
        assert await texts(mine) == ["from elsewhere"]
        message = turn("tg:-1", "mine", user="3", platform_message_id="7")
        await mine.record_overheard(message, keep=10)
        assert await texts(mine) == ["from elsewhere", "mine"]
        assert await texts(mine, time.time() + 60) == []  # the age cut, on every read
        assert await other.replace_overheard("tg:-1", "7", "mine, edited")
        assert await texts(mine) == ["from elsewhere", "mine, edited"]
        await mine.record_overheard(turn("tg:-1", "newest", user="2"), keep=2)
        assert await texts(mine) == ["mine, edited", "newest"]
        await mine.delete_user("tg", "3")
        assert await texts(mine) == ["newest"]
        await other.record_overheard(turn("tg:-1", "next", user="2"), keep=10)
        assert await texts(mine) == ["newest", "next"]
        await mine.delete_older_than(-1)  # no turn is old enough: the chatter still goes
        assert await texts(mine) == []
        await mine.record_overheard(turn("tg:-1", "again", user="2"), keep=10)
        assert await texts(mine) == ["again"]
        await mine.reset("tg:-1", "tg:-1", "u")
        assert await texts(mine) == []


async def test_chatter_beyond_keep_is_retained_passed_for_catchup(storage: Storage) -> None:
    """``retain``: chatter older than the newest ``keep`` stays, *passed*: never in a prompt
    or replaced by an edit again, still in the transcript /catchup reads, up to ``retain``."""
    for n in range(6):
        message = turn("tg:-1", f"chatter {n}", user="2", platform_message_id=f"m{n}")
        await storage.record_overheard(message, keep=2, retain=5)
    assert [o.text for o in await storage.load_overheard("tg:-1", 0)] == ["chatter 4", "chatter 5"]
    said = [s.text for s in await storage.said("tg:-1", 0, 100)]
    assert said == [f"chatter {n}" for n in range(1, 6)]  # 5 retained: the oldest went
    assert not await storage.replace_overheard("tg:-1", "m2", "edited")  # passed: untouched
    assert await storage.replace_overheard("tg:-1", "m5", "chatter 5, edited")
    # a turn moves the chosen in and passes over what was older: kept, never prompted again
    [four, five] = await storage.load_overheard("tg:-1", 0)
    await storage.begin_turn(turn("tg:-1", "bot?", overheard=(five.overheard_id,)))
    assert await storage.load_overheard("tg:-1", 0) == []
    said = [s.text for s in await storage.said("tg:-1", 0, 100)]
    assert said == ["chatter 1", "chatter 2", "chatter 3", "chatter 4", "chatter 5, edited", "bot?"]
    assert four.text == "chatter 4"
