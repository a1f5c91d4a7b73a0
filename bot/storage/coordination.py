"""What several processes on one database agree on: an inbox of updates, leases, shared limits.

A replica (``python -m bot run`` sharing the database with others) must not rely on its own
memory for anything another replica could also be doing:

* :class:`Inbox` -- an update a platform pushed (a Telegram webhook POST) is stored *before* it is
  acknowledged, recognised when the platform redelivers it (to any replica), and handed to one
  replica at a time under a lease; a replica that dies mid-update loses its lease and another
  one takes the update over. Updates of one *lane* (a chat) run one at a time, in ``update_id``
  order, on whichever replica holds the lane's head; different lanes run in parallel everywhere.
* :class:`Leases` -- named, time-limited ownership (the scheduler's leader, the one long-poller of
  a bot token, the one replica that calls ``setWebhook``).
* :class:`SharedLimits` -- per-user token buckets, one request in flight, and the circuit breaker,
  held in the database so that a flood spread over replicas costs at most the burst.

Times (leases, buckets) are measured by the database's clock, so replicas on hosts whose clocks
differ still agree. Owners are :func:`bot.storage.owners.new_owner` strings.
"""

from __future__ import annotations

from typing import Protocol

from bot.values import BreakerState, InboxItem, InboxProgress, RateDecision

__all__ = [
    "INBOX_FOLDED",
    "INBOX_MAX_ATTEMPTS",
    "Inbox",
    "Leases",
    "SharedLimits",
    "bucket_decision",
]

# An update claimed this many times without being finished is given up (logged, marked done with
# an error) rather than blocking its lane forever.
INBOX_MAX_ATTEMPTS = 5
# The error ``inbox_fold`` finishes an item with (then the inbox item id it was answered with):
# finished, and answered.
INBOX_FOLDED = "answered with inbox item"


class Inbox(Protocol):
    """Updates made durable before they are acknowledged.

    A backend must provide:

    - **Recognised redeliveries.** :meth:`inbox_put` of a ``(source, update_id)`` already stored
      (pending, leased or done, until :meth:`inbox_prune` removes it) stores nothing and returns
      False; whichever of two racing calls wins, exactly one returns True.
    - **Heads only.** :meth:`inbox_claim` leases only the *head* of a lane (its unfinished item
      with the lowest ``update_id``), and only when no live lease is held on it; so a lane's
      items are handed out one at a time, in order, whatever the replicas do. Claims from
      concurrent callers never hand one item to two owners. A claim adds one to ``attempts``.
    - **Leases expire.** An item whose lease ran out (its owner died) is claimable again, by any
      owner. :meth:`inbox_renew` extends every lease ``owner`` holds; :meth:`inbox_done` finishes
      an item only for the owner that holds it (False otherwise: the lease was lost and another
      owner may be running it). A lease that ran out but that nobody has claimed since is still
      its owner's to finish or renew (nobody else can be running it); a released one is not.
    - Claims are oldest lane-head first (by ``id``), at most ``limit``, ``source`` only.
    - **Amends before the claim.** An update may name its ``subject`` (a Telegram message: its
      id); :meth:`inbox_amend` replaces the payload of the newest unfinished item of that
      lane and subject that nobody has claimed yet (never claimed, or released), and stores
      the amending update as done, so its redelivery is recognised and it never runs. An item
      claimed (even if its lease ran out: its owner may have started it) is not amended. Of an
      amend and a claim racing, the claim gets the amended payload, or the original one and
      the amend fails (or it skips the item being amended, left for the next claim).
    """

    async def inbox_put(
        self, source: str, update_id: int, lane: str, payload: str, subject: str | None = None
    ) -> bool:
        """Store an update durably; False when it is already stored (a redelivery).

        ``subject``: what the update is about, for a later :meth:`inbox_amend` (None: nothing
        amends it)."""
        ...

    async def inbox_amend(
        self, source: str, update_id: int, lane: str, subject: str, payload: str, amended: str
    ) -> bool:
        """Fold update ``update_id`` (``payload``, as received) into the unclaimed item of
        ``lane`` about ``subject``, whose payload becomes ``amended``; ``update_id`` is stored
        as done. False, changing nothing, when no such item waits or ``update_id`` is already
        stored: then :meth:`inbox_put` it (which recognises a redelivery)."""
        ...

    async def inbox_claim(
        self, source: str, owner: str, lease_seconds: float, limit: int
    ) -> list[InboxItem]:
        """Lease up to ``limit`` lane heads nobody holds; oldest first."""
        ...

    async def inbox_renew(self, owner: str, lease_seconds: float) -> int:
        """Extend every lease ``owner`` holds to ``lease_seconds`` from now; returns how many."""
        ...

    async def inbox_done(self, item_id: int, owner: str, error: str | None = None) -> bool:
        """Finish an item ``owner`` holds (``error``: given up, why). False if not held."""
        ...

    async def inbox_release(self, owner: str) -> int:
        """Give back every lease ``owner`` holds (clean shutdown), claimable at once."""
        ...

    async def inbox_pending(self, source: str) -> int:
        """Items of ``source`` not done yet (leased or not)."""
        ...

    async def inbox_following(
        self, source: str, lane: str, after_update_id: int, limit: int
    ) -> list[InboxItem]:
        """Up to ``limit`` unfinished items of ``lane`` after ``after_update_id``, in lane
        order, nobody holds: what waits behind the head its owner runs (a burst's later
        messages, ``bot.conversation.bursts``)."""
        ...

    async def inbox_fold(self, item_id: int, into: int) -> bool:
        """Finish item ``item_id``, which nobody holds, as answered with item ``into`` (its
        lane's head, whose owner took it into that turn). False if it is held or done."""
        ...

    async def inbox_progress(self, source: str, lane: str, subject: str) -> InboxProgress | None:
        """How far the newest item of ``lane`` about ``subject`` got; None when none is stored
        (never, or pruned). After a crash: whether the update a reply was cut off in will run
        again, or already ran (``adapters.telegram.recovery``), so its user need not ask again."""
        ...

    async def inbox_prune(self, older_than_seconds: float) -> int:
        """Delete finished items done more than ``older_than_seconds`` ago; returns how many."""
        ...


class Leases(Protocol):
    """Named ownership for a while: at most one live holder per name.

    A backend must provide: :meth:`acquire_lease` succeeds when nobody holds ``name``, when its
    lease ran out, or when ``owner`` already holds it (then it is extended); of concurrent
    acquirers exactly one wins; :meth:`release_lease` by anyone but the holder changes nothing.
    """

    async def acquire_lease(self, name: str, owner: str, seconds: float) -> bool:
        """Hold (or keep holding) ``name`` for ``seconds``; False when another owner holds it."""
        ...

    async def release_lease(self, name: str, owner: str) -> None: ...

    async def lease_holder(self, name: str) -> str | None:
        """The owner holding ``name`` now (unexpired), or None."""
        ...


class SharedLimits(Protocol):
    """Limits that hold across replicas.

    A backend must provide:

    - :meth:`take_token`: a token bucket per ``key`` of ``burst`` tokens refilled at
      ``per_minute / 60`` a second; atomic (concurrent takers never overspend the bucket).
    - :meth:`claim_flight` / :meth:`release_flight`: at most one live claim per key; a claim
      expires after ``seconds`` (its replica died); release by another owner changes nothing.
      A refused claim says whether it is the first refusal of this claim (say it once).
    - :meth:`breaker_failure` / :meth:`breaker_success` / :meth:`breaker_state`: a shared count
      of consecutive failures; the failure that reaches ``threshold`` opens the breaker for
      ``open_seconds`` (and restarts the count); a success closes it and zeroes the count.
      A breaker nobody has failed (or that a success closed) reads ``BreakerState(0, 0.0)``; one
      that opened and cooled down without a success since keeps its ``open_until`` in the past.
    - :meth:`prune_limits` forgets buckets that have refilled and claims that expired.
    """

    async def take_token(self, key: str, per_minute: float, burst: int) -> RateDecision: ...

    async def claim_flight(self, key: str, owner: str, seconds: float) -> tuple[bool, bool]:
        """``(claimed, first_refusal)``."""
        ...

    async def release_flight(self, key: str, owner: str) -> None: ...

    async def breaker_failure(
        self, name: str, threshold: int, open_seconds: float
    ) -> BreakerState: ...

    async def breaker_success(self, name: str) -> None: ...

    async def breaker_state(self, name: str) -> BreakerState: ...

    async def prune_limits(self) -> int:
        """Forget refilled buckets and expired claims; returns how many rows went."""
        ...


def bucket_decision(tokens: float, refusals: int, per_second: float) -> RateDecision:
    """What a bucket left with ``tokens`` after ``refusals`` refusals in a row means."""
    if refusals == 0:
        return RateDecision(allowed=True, retry_after=0.0, first_refusal=False)
    wait = (1.0 - tokens) / per_second if per_second > 0 else float("inf")
    return RateDecision(allowed=False, retry_after=max(0.0, wait), first_refusal=refusals == 1)
