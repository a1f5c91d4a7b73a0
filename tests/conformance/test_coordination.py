"""Inbox, leases and shared limits (bot.storage.coordination): what replicas agree on.

Races run two store instances over one database (two SQLite connections to one file, two
asyncpg pools) with ``asyncio.gather``. Leases that must run out last 0.2 s; the tests then
sleep past them and assert on what changed, never on how long anything took.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.storage import Storage
from bot.values import InboxItem, InboxProgress
from tests.conformance.conftest import Backend

SHORT = 0.2  # a lease meant to run out
PAST_SHORT = 0.35  # slept to be sure it has
LONG = 60.0  # a lease meant to hold for the whole test


@pytest.fixture
async def pair(backend: Backend) -> AsyncIterator[tuple[Storage, Storage]]:
    """Two replicas: two instances over one database."""
    async with backend.open() as first, backend.open() as second:
        yield first, second


async def put(store: Storage, update_id: int, lane: str, source: str = "telegram") -> bool:
    return await store.inbox_put(source, update_id, lane, f'{{"update_id": {update_id}}}')


# -- inbox ----------------------------------------------------------------------------------


async def test_a_redelivered_update_is_recognised_until_it_is_pruned(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await put(a, 1, "chat:1")
    assert not await put(b, 1, "chat:1")  # pending, redelivered to the other replica
    (item,) = await a.inbox_claim("telegram", "a", LONG, 10)
    assert not await put(b, 1, "chat:1")  # leased
    assert await a.inbox_done(item.id, "a")
    assert not await put(b, 1, "chat:1")  # done
    assert not await put(b, 1, "elsewhere")  # the id decides, not the lane
    assert await put(b, 1, "chat:1", source="discord")  # ... of its source
    assert await a.inbox_prune(3600) == 0  # done just now: kept
    await asyncio.sleep(0.05)
    assert await b.inbox_prune(0) == 1  # only the finished one goes
    assert await a.inbox_pending("discord") == 1
    assert await put(a, 1, "chat:1")  # forgotten: stored again


async def test_of_two_racing_puts_exactly_one_wins(pair: tuple[Storage, Storage]) -> None:
    a, b = pair
    for update_id in range(20):
        results = await asyncio.gather(put(a, update_id, "c"), put(b, update_id, "c"))
        assert sorted(results) == [False, True]
    assert await a.inbox_pending("telegram") == 20


async def test_puts_at_once_each_learn_their_own_outcome(storage: Storage) -> None:
    # A webhook burst: puts arriving together, two of them repeated within it.
    ids = [1, 2, 1, 3, 3]
    results = await asyncio.gather(
        *(put(storage, update_id, f"lane{update_id}") for update_id in ids),
        put(storage, 3, "lane3", source="discord"),
    )
    assert [results[0], results[2]].count(True) == 1  # a repeat within the burst: one wins
    assert [results[3], results[4]].count(True) == 1
    assert results[1] and results[5]
    claimed = await storage.inbox_claim("telegram", "w", LONG, 10)
    assert sorted(item.update_id for item in claimed) == [1, 2, 3]
    assert await storage.inbox_pending("discord") == 1


async def test_items_finished_at_once_are_each_finished_by_their_owner(
    storage: Storage,
) -> None:
    for update_id in range(6):
        assert await put(storage, update_id, f"lane{update_id}")
    items = await storage.inbox_claim("telegram", "w", LONG, 10)
    results = await asyncio.gather(
        *(storage.inbox_done(item.id, "w", "failed" if item.update_id == 2 else None)
          for item in items[:5]),
        storage.inbox_done(items[5].id, "someone else"),
    )  # fmt: skip
    assert results == [True] * 5 + [False]
    assert await storage.inbox_pending("telegram") == 1  # the one not its owner's to finish
    assert await storage.inbox_done(items[5].id, "w")


async def test_claims_hand_out_lane_heads_only_in_update_id_order(storage: Storage) -> None:
    for update_id, lane in [(5, "A"), (3, "B"), (6, "A"), (7, "A"), (4, "C")]:
        assert await put(storage, update_id, lane)
    await put(storage, 1, "A", source="discord")
    first = await storage.inbox_claim("telegram", "w", LONG, 10)
    # one head per lane, oldest arrival first; never a second item of a lane
    assert [(i.update_id, i.lane) for i in first] == [(5, "A"), (3, "B"), (4, "C")]
    assert all(i.source == "telegram" and i.attempts == 1 for i in first)
    assert first[0].payload == '{"update_id": 5}'
    assert await storage.inbox_claim("telegram", "w", LONG, 10) == []  # all heads leased
    assert await storage.inbox_pending("telegram") == 5
    assert await storage.inbox_done(first[0].id, "w")
    (second,) = await storage.inbox_claim("telegram", "w", LONG, 10)
    assert (second.update_id, second.lane) == (6, "A")
    assert await storage.inbox_done(second.id, "w", error="given up: too many attempts")
    limited = await storage.inbox_claim("telegram", "other", LONG, 1)
    assert [i.update_id for i in limited] == [7]  # at most ``limit``
    assert await storage.inbox_pending("telegram") == 3
    assert await storage.inbox_claim("telegram", "w", LONG, 0) == []


async def amend(store: Storage, update_id: int, lane: str, subject: str, text: str) -> bool:
    edit = f'{{"update_id": {update_id}, "edited": "{text}"}}'
    return await store.inbox_amend("telegram", update_id, lane, subject, edit, f'"{text}"')


async def test_an_unclaimed_update_is_amended_and_the_amend_is_stored_done(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await a.inbox_put("telegram", 1, "L", '"busy"', subject="m1")
    assert await a.inbox_put("telegram", 2, "L", '"original"', subject="m2")
    assert await amend(b, 3, "L", "m2", "edited once")  # 2 waits behind 1: unclaimed
    assert await amend(a, 4, "L", "m2", "edited twice")
    assert not await amend(b, 4, "L", "m2", "edited twice")  # a redelivery of the amend
    assert not await put(a, 4, "L")  # ... recognised by inbox_put too
    assert not await amend(a, 5, "L", "m9", "no such subject")
    assert not await amend(a, 6, "other lane", "m2", "wrong lane")
    assert await a.inbox_pending("telegram") == 2  # the amends are done, never handed out
    (head,) = await a.inbox_claim("telegram", "w", LONG, 10)
    assert head.payload == '"busy"'
    assert not await amend(b, 7, "L", "m1", "too late")  # claimed: being run
    assert await a.inbox_done(head.id, "w")
    (amended,) = await b.inbox_claim("telegram", "w", LONG, 10)
    assert (amended.update_id, amended.payload) == (2, '"edited twice"')
    assert not await amend(a, 8, "L", "m2", "too late")  # claimed
    assert await b.inbox_done(amended.id, "w")
    assert not await amend(a, 9, "L", "m2", "too late")  # done
    assert await b.inbox_claim("telegram", "w", LONG, 10) == []


async def test_an_item_whose_lease_ran_out_or_was_released_unclaimed(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await a.inbox_put("telegram", 1, "L", '"one"', subject="m1")
    assert await a.inbox_put("telegram", 2, "K", '"two"', subject="m2")
    await a.inbox_claim("telegram", "dead", SHORT, 10)
    await asyncio.sleep(PAST_SHORT)
    # Its owner may have started it: an expired lease is no invitation to amend.
    assert not await amend(b, 3, "L", "m1", "late")
    assert await a.inbox_release("dead") == 2
    # Released at a clean shutdown, nothing ran: amended like a fresh one.
    assert await amend(b, 4, "K", "m2", "edited")
    items = await b.inbox_claim("telegram", "alive", LONG, 10)
    assert sorted((i.update_id, i.payload) for i in items) == [(1, '"one"'), (2, '"edited"')]


async def test_an_amend_racing_a_claim_is_either_seen_or_refused(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    for n in range(12):
        lane = f"lane:{n}"
        assert await a.inbox_put("telegram", n * 10, lane, '"original"', subject=f"m{n}")
        claimed, amended = await asyncio.gather(
            a.inbox_claim("telegram", "w", LONG, 1), amend(b, n * 10 + 1, lane, f"m{n}", "new")
        )
        if not claimed:  # the amend held the row: the claim skipped it, for the next one
            assert amended
            claimed = await a.inbox_claim("telegram", "w", LONG, 1)
        (item,) = claimed
        assert item.payload == ('"new"' if amended else '"original"')
        assert await a.inbox_done(item.id, "w")


async def test_racing_replicas_run_each_item_once_lanes_in_order_one_at_a_time(
    pair: tuple[Storage, Storage],
) -> None:
    lanes = [f"chat:{n}" for n in range(8)]
    update_id = 0
    for _ in range(4):
        for lane in lanes:
            update_id += 1
            await put(pair[update_id % 2], update_id, lane)
    running: set[str] = set()
    seen: dict[str, list[int]] = {lane: [] for lane in lanes}
    handed: list[int] = []
    overlaps: list[InboxItem] = []

    async def replica(store: Storage, owner: str) -> None:
        while await store.inbox_pending("telegram"):
            items = await store.inbox_claim("telegram", owner, LONG, 3)
            for item in items:
                if item.lane in running:
                    overlaps.append(item)
                running.add(item.lane)
                handed.append(item.id)
                seen[item.lane].append(item.update_id)
            for item in items:
                await asyncio.sleep(0)  # let the other replica claim meanwhile
                running.discard(item.lane)
                assert await store.inbox_done(item.id, owner)
            if not items:
                await asyncio.sleep(0.005)

    await asyncio.gather(replica(pair[0], "a"), replica(pair[1], "b"))
    assert overlaps == []
    assert sorted(handed) == sorted(set(handed)) and len(handed) == 32
    assert all(ids == sorted(ids) and len(ids) == 4 for ids in seen.values())


async def test_a_lost_lease_lets_another_owner_take_the_item_over(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    await put(a, 1, "L")
    await put(a, 2, "L")
    (item,) = await a.inbox_claim("telegram", "dead", SHORT, 10)
    assert await b.inbox_claim("telegram", "alive", LONG, 10) == []  # still held
    await asyncio.sleep(PAST_SHORT)
    (again,) = await b.inbox_claim("telegram", "alive", LONG, 10)
    assert (again.id, again.update_id, again.attempts) == (item.id, 1, 2)
    assert not await a.inbox_done(item.id, "dead")  # lost: another owner is running it
    assert await a.inbox_renew("dead", LONG) == 0
    assert await b.inbox_done(again.id, "alive")
    assert not await b.inbox_done(again.id, "alive")  # finished once


async def test_renewing_keeps_every_lease_of_its_owner(pair: tuple[Storage, Storage]) -> None:
    a, b = pair
    for update_id, lane in [(1, "x"), (2, "y"), (3, "z")]:
        await put(a, update_id, lane)
    held = await a.inbox_claim("telegram", "slow", SHORT, 2)
    assert await a.inbox_renew("slow", LONG) == 2
    assert await a.inbox_renew("nobody", LONG) == 0
    await asyncio.sleep(PAST_SHORT)
    (other,) = await b.inbox_claim("telegram", "other", LONG, 10)
    assert other.update_id == 3  # the renewed two are still held
    assert all([await a.inbox_done(i.id, "slow") for i in held])


async def test_an_expired_lease_nobody_took_is_still_its_owners(storage: Storage) -> None:
    await put(storage, 1, "x")
    (item,) = await storage.inbox_claim("telegram", "slow", SHORT, 1)
    await asyncio.sleep(PAST_SHORT)
    assert await storage.inbox_renew("slow", LONG) == 1
    assert await storage.inbox_claim("telegram", "other", LONG, 1) == []
    assert await storage.inbox_done(item.id, "slow")


async def test_only_the_holder_finishes_an_item(pair: tuple[Storage, Storage]) -> None:
    a, b = pair
    await put(a, 1, "x")
    (item,) = await a.inbox_claim("telegram", "holder", LONG, 1)
    assert not await b.inbox_done(item.id, "someone-else")
    assert not await b.inbox_done(item.id + 1000, "holder")  # no such item
    assert await a.inbox_pending("telegram") == 1
    assert await b.inbox_done(item.id, "holder")  # the owner, from any instance
    assert await a.inbox_pending("telegram") == 0


async def test_released_leases_are_claimable_at_once(pair: tuple[Storage, Storage]) -> None:
    a, b = pair
    await put(a, 1, "x")
    await put(a, 2, "y")
    first = await a.inbox_claim("telegram", "leaving", LONG, 10)
    assert await a.inbox_release("leaving") == 2
    assert await a.inbox_release("leaving") == 0
    assert not await a.inbox_done(first[0].id, "leaving")  # given back: no longer its
    again = await b.inbox_claim("telegram", "staying", LONG, 10)
    assert [i.id for i in again] == [i.id for i in first]
    assert [i.attempts for i in again] == [2, 2]  # every claim counts


# -- leases ---------------------------------------------------------------------------------


async def test_a_lease_has_one_holder_until_released_or_expired(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await a.lease_holder("scheduler") is None
    assert await a.acquire_lease("scheduler", "one", SHORT)
    assert not await b.acquire_lease("scheduler", "two", LONG)
    assert await b.lease_holder("scheduler") == "one"
    assert await a.acquire_lease("scheduler", "one", LONG)  # kept and extended
    await asyncio.sleep(PAST_SHORT)
    assert await b.lease_holder("scheduler") == "one"  # extended past the short lease
    await b.release_lease("scheduler", "two")  # not its holder: nothing changes
    assert await a.lease_holder("scheduler") == "one"
    assert await b.acquire_lease("poller", "two", LONG)  # names are independent
    await a.release_lease("scheduler", "one")
    assert await b.lease_holder("scheduler") is None
    assert await b.acquire_lease("scheduler", "two", SHORT)
    await asyncio.sleep(PAST_SHORT)
    assert await a.lease_holder("scheduler") is None  # ran out
    assert await a.acquire_lease("scheduler", "one", LONG)


async def test_of_racing_acquirers_exactly_one_wins(pair: tuple[Storage, Storage]) -> None:
    a, b = pair
    for round_ in range(5):
        name = f"webhook:{round_}"
        results = await asyncio.gather(
            *(pair[n % 2].acquire_lease(name, f"owner{n}", LONG) for n in range(6))
        )
        assert sum(results) == 1
        winner = f"owner{results.index(True)}"
        assert await a.lease_holder(name) == winner == await b.lease_holder(name)


# -- shared limits --------------------------------------------------------------------------


async def test_racing_takers_on_two_replicas_never_overspend_the_bucket(
    pair: tuple[Storage, Storage],
) -> None:
    decisions = await asyncio.gather(
        *(pair[n % 2].take_token("tg:1|u1", per_minute=0.01, burst=5) for n in range(30))
    )
    assert sum(d.allowed for d in decisions) == 5
    refused = [d for d in decisions if not d.allowed]
    assert sum(d.first_refusal for d in refused) == 1  # said once, whoever hears it
    assert all(d.retry_after > 0 for d in refused)
    assert all(d.retry_after == 0 and not d.first_refusal for d in decisions if d.allowed)
    other = await pair[0].take_token("tg:1|u2", per_minute=0.01, burst=5)
    assert other.allowed  # a bucket per key


async def test_a_bucket_refills_and_a_new_streak_is_told_again(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    key = "tg:1|u1"
    # One a second: a loaded machine can take a tenth of that between two calls; not a second.
    assert (await a.take_token(key, per_minute=60, burst=1)).allowed
    first = await b.take_token(key, per_minute=60, burst=1)
    assert not first.allowed and first.first_refusal
    assert 0 < first.retry_after <= 1.0
    quiet = await a.take_token(key, per_minute=60, burst=1)
    assert not quiet.allowed and not quiet.first_refusal
    await asyncio.sleep(1.05)
    assert (await b.take_token(key, per_minute=60, burst=1)).allowed  # refilled
    again = await a.take_token(key, per_minute=60, burst=1)
    assert not again.allowed and again.first_refusal  # a new streak


async def test_one_flight_per_key_until_released_by_its_owner_or_expired(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await a.claim_flight("k", "o1", LONG) == (True, False)
    assert await b.claim_flight("k", "o2", LONG) == (False, True)  # the first refusal
    assert await a.claim_flight("k", "o3", LONG) == (False, False)  # then quiet
    await b.release_flight("k", "o2")  # not the holder: ignored
    assert await b.claim_flight("k", "o2", LONG) == (False, False)
    assert await b.claim_flight("other", "o2", LONG) == (True, False)
    await b.release_flight("k", "o1")  # the holder, from any instance
    assert await a.claim_flight("k", "o4", SHORT) == (True, False)
    assert await b.claim_flight("k", "o5", LONG) == (False, True)  # a new claim, told again
    await asyncio.sleep(PAST_SHORT)
    assert await b.claim_flight("k", "o5", LONG) == (True, False)  # o4's replica died


async def test_of_racing_flight_claims_exactly_one_wins(pair: tuple[Storage, Storage]) -> None:
    results = await asyncio.gather(
        *(pair[n % 2].claim_flight("k", f"o{n}", LONG) for n in range(8))
    )
    assert sum(claimed for claimed, _ in results) == 1
    assert sum(first for _, first in results) == 1


async def test_the_breaker_opens_at_the_threshold_across_replicas_and_closes_on_success(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert await a.breaker_state("llm") == await b.breaker_state("llm")
    assert (await a.breaker_state("llm")).failures == 0
    assert (await a.breaker_state("llm")).open_until == 0.0
    one = await a.breaker_failure("llm", threshold=3, open_seconds=LONG)
    two = await b.breaker_failure("llm", threshold=3, open_seconds=LONG)
    assert (one.failures, two.failures) == (1, 2)
    assert two.open_for == 0.0
    assert (await a.breaker_state("llm")).failures == 2
    opened = await a.breaker_failure("llm", threshold=3, open_seconds=LONG)
    assert opened.failures == 0  # the count restarts
    assert 0 < opened.open_for <= LONG
    seen = await b.breaker_state("llm")
    assert seen.open_for > 0 and seen.open_until == pytest.approx(opened.open_until, abs=1e-3)
    assert (await b.breaker_state("other")).open_for == 0.0
    await b.breaker_success("llm")
    closed = await a.breaker_state("llm")
    assert (closed.failures, closed.open_until, closed.open_for) == (0, 0.0, 0.0)


async def test_racing_failures_open_the_breaker_once_and_it_cools_down(
    pair: tuple[Storage, Storage],
) -> None:
    states = await asyncio.gather(
        *(pair[n % 2].breaker_failure("llm", threshold=4, open_seconds=SHORT) for n in range(4))
    )
    assert sorted(s.failures for s in states) == [0, 1, 2, 3]  # counted one at a time
    assert sum(s.open_for > 0 for s in states) == 1
    await asyncio.sleep(PAST_SHORT)
    cooled = await pair[0].breaker_state("llm")
    assert cooled.open_for == 0.0 and cooled.open_until > 0  # cooled down, not yet closed


async def test_prune_limits_forgets_refilled_buckets_and_expired_claims(
    pair: tuple[Storage, Storage],
) -> None:
    a, b = pair
    assert (await a.take_token("fast", per_minute=6000, burst=1)).allowed  # 100 a second
    assert (await a.take_token("slow", per_minute=0.01, burst=1)).allowed
    assert (await a.claim_flight("gone", "o1", SHORT))[0]
    assert (await a.claim_flight("live", "o1", LONG))[0]
    await asyncio.sleep(PAST_SHORT)
    assert await b.prune_limits() == 2  # "fast" has refilled, "gone" expired
    assert await b.prune_limits() == 0
    assert not (await a.take_token("slow", per_minute=0.01, burst=1)).allowed  # kept
    assert await b.claim_flight("live", "o2", LONG) == (False, True)  # kept


async def test_the_head_owner_may_fold_what_waits_behind_it(pair: tuple[Storage, Storage]) -> None:
    """A burst's later messages wait behind the head its owner runs: that owner reads them
    (``inbox_following``) and finishes them as answered with the head (``inbox_fold``); the
    others then never run, the rest of the lane does, in order."""
    a, b = pair
    for update_id, lane in ((1, "c"), (2, "c"), (3, "other"), (4, "c"), (5, "c")):
        assert await put(a, update_id, lane)
    (head, other) = await a.inbox_claim("telegram", "a", LONG, 10)
    assert (head.update_id, other.update_id) == (1, 3)
    behind = await b.inbox_following("telegram", "c", head.update_id, 10)
    assert [item.update_id for item in behind] == [2, 4, 5]
    assert [item.update_id for item in await a.inbox_following("telegram", "c", 2, 1)] == [4]
    assert await a.inbox_fold(behind[0].id, head.id)
    assert await a.inbox_fold(behind[1].id, head.id)
    assert not await b.inbox_fold(behind[0].id, head.id)  # done already
    assert not await a.inbox_fold(head.id, head.id)  # held: its owner finishes it
    assert await a.inbox_done(head.id, "a")
    (after,) = [i for i in await b.inbox_claim("telegram", "b", LONG, 10) if i.lane == "c"]
    assert after.update_id == 5  # 2 and 4 were answered with 1
    assert await a.inbox_following("telegram", "c", 0, 10) == []  # 5 is held now
    assert await a.inbox_pending("telegram") == 2  # 3 and 5


async def test_an_items_progress_is_read_by_its_subject(pair: tuple[Storage, Storage]) -> None:
    """After a crash the adapter asks how far the message a reply was cut off in got
    (``inbox_progress``), by lane and subject: waiting (and how often it was claimed), or
    finished, answered or not (given up; folded into a burst's turn counts as answered)."""
    a, b = pair
    for update_id, message in ((1, 10), (2, 11), (3, 12), (4, 13)):
        stored = f'{{"update_id": {update_id}}}'
        assert await a.inbox_put("telegram", update_id, "c", stored, subject=f"message:{message}")
    assert await b.inbox_progress("telegram", "c", "message:10") == InboxProgress(0, False, False)
    assert await b.inbox_progress("telegram", "other", "message:10") is None  # another chat
    assert await b.inbox_progress("telegram.quiz", "c", "message:10") is None  # another bot
    assert await b.inbox_progress("telegram", "c", "message:99") is None
    (head,) = await a.inbox_claim("telegram", "a", LONG, 10)
    assert await b.inbox_progress("telegram", "c", "message:10") == InboxProgress(1, False, False)
    behind = await a.inbox_following("telegram", "c", head.update_id, 1)
    assert await a.inbox_fold(behind[0].id, head.id)  # message 11: taken into 10's turn
    assert await a.inbox_done(head.id, "a")
    assert await b.inbox_progress("telegram", "c", "message:10") == InboxProgress(1, True, True)
    assert await b.inbox_progress("telegram", "c", "message:11") == InboxProgress(0, True, True)
    (given_up,) = await a.inbox_claim("telegram", "a", LONG, 10)
    assert await a.inbox_done(given_up.id, "a", error="given up after 5 attempts")
    assert await b.inbox_progress("telegram", "c", "message:12") == InboxProgress(1, True, False)
    assert await b.inbox_progress("telegram", "c", "message:13") == InboxProgress(0, False, False)
