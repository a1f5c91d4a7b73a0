"""Scheduled posts: a prompt an admin set up, run at its time as a turn of the chat's
conversation and posted to the chat ("every Monday 09:00 Europe/Berlin: summarise last week's
discussion").

Why a turn of the chat's own conversation (:meth:`ChatService.chat`): the run gets what any
answer there gets, the persona, the history window and overheard chatter, recalled memories,
knowledge passages and the chat's tools, and it meets the same guardrails: access lists, the
daily budgets (a spent budget refuses it, logged, nothing posted), and its tokens are booked on
the usage ledger. It speaks as the post's own member (``schedule-N``, never an admin: no
admin-only tool runs unattended), so its cost is booked apart and no person's rate or private
conversation is used.

Where they live: the scheduler's job store (:mod:`bot.scheduling.posts`: the payload is the
record), so they survive restarts, any replica can list and cancel them, and the scheduler's
leader fires each run once. A run that fell due while the bot was down runs at the next start
(missed runs of a weekly post run once). A run is at most once: one cut short by a crash is not
repeated. A run due at start-up waits up to ``ADAPTER_WAIT`` for its platform's adapter to
start; a one-off whose platform has no running adapter in the process that fired it even then
(a console session beside the bot) is put off by ``RETRY_DELAY``, up to ``MAX_ATTEMPTS`` times;
a weekly run is skipped then, with a warning.

Setting and cancelling a post are audited (action ``schedule``, :func:`~bot.conversation.
changes.schedule_change`) with who did it: the chat's admin, or the operator's token
(``http:ops``). When a chat changes its id (a Telegram group that became a supergroup), its
posts follow it (:meth:`ScheduledPosts.moved`): same numbers, same times, the new chat.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.config import Settings
from bot.context import ChatContext, ChatType
from bot.conversation.changes import schedule_change
from bot.conversation.service import ChatService
from bot.errors import UserFacingError
from bot.platform.delivery import Outbound
from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.scheduling.posts import PostTarget, ScheduledPost, job_id
from bot.scheduling.recurrence import ScheduleError, parse_recurrence
from bot.scheduling.scheduler import Scheduler
from bot.storage.kv import KeyValueStore
from bot.text import clean_text
from bot.values import AuditAction

__all__ = ["ScheduledPosts"]

log = logging.getLogger(__name__)

KV_NAMESPACE = "schedules"  # the id counter: atomic across replicas
RETRY_DELAY = timedelta(minutes=5)
MAX_ATTEMPTS = 12  # an hour of waiting for the platform's adapter
ADAPTER_WAIT = 60.0  # seconds a run waits for its platform's adapter to start
_FRAME = 200  # characters the run's framing adds to the prompt


class ScheduledPosts:
    """Create, list, cancel and run scheduled posts (``/schedule``, the admin API)."""

    def __init__(
        self,
        settings: Settings,
        service: ChatService,
        scheduler: Scheduler,
        outbound: Outbound,
        counter: KeyValueStore,
        *,
        adapter_wait: float = ADAPTER_WAIT,
    ) -> None:
        self.settings = settings.schedules
        self.service = service
        self.scheduler = scheduler
        self.outbound = outbound
        self.counter = counter
        self.adapter_wait = adapter_wait
        scheduler.register(SCHEDULED_POSTS_KIND, self._fire)  # before start: due runs find it

    # -- who may ---------------------------------------------------------------------------

    def may_schedule(self, ctx: ChatContext) -> bool:
        """``schedules.who``: the chat's admins (the platform's rule), or the bot's only."""
        admins = self.service.admins
        if self.settings.who == "bot_admins":
            return admins.is_bot_admin(ctx)
        return admins.is_admin(ctx)

    # -- listing, creating, cancelling -----------------------------------------------------

    def listed(self, chat_key: str | None = None) -> list[ScheduledPost]:
        """Pending posts (of one chat), soonest first."""
        posts = [
            ScheduledPost.from_payload(job.payload, job.next_run)
            for job in self.scheduler.pending(SCHEDULED_POSTS_KIND)
        ]
        return [p for p in posts if chat_key is None or p.target.chat_key == chat_key]

    async def schedule(self, ctx: ChatContext, when: str, prompt: str) -> ScheduledPost:
        """A post in the caller's chat (and thread); :class:`ScheduleError` says what is wrong."""
        target = PostTarget(ctx.platform, ctx.chat_id, ctx.thread_id, ctx.chat_type, ctx.chat_title)
        by_name = ctx.user_name or ctx.user_id
        post = await self._create(target, when, prompt, f"{ctx.platform}:{ctx.user_id}", by_name)
        await self._audit(post, "set", ctx.user_id, ctx.user_name)
        return post

    async def schedule_in(
        self, chat_key: str, thread_id: str | None, when: str, prompt: str, *, by: str
    ) -> ScheduledPost:
        """A post in a chat the bot knows (the admin API, the dashboard), by operator ``by``."""
        summary = await self.service.store.chat_summary(chat_key)
        if summary is None:
            raise ScheduleError(
                f"No chat {chat_key} is known: the bot must have talked there first."
            )
        known = {t.value for t in ChatType}
        chat_type = ChatType(summary.chat_type) if summary.chat_type in known else ChatType.GROUP
        target = PostTarget(summary.platform, summary.chat_id, thread_id, chat_type, summary.title)
        post = await self._create(target, when, prompt, by, by)
        await self._audit(post, "set", by, by)
        return post

    async def cancel(
        self,
        post_id: int,
        chat_key: str | None = None,
        *,
        by: str,
        by_name: str | None = None,
    ) -> ScheduledPost | None:
        """Cancel for good (None: no such pending post, or not in ``chat_key``), audited as
        ``by`` (a person's id on the chat's platform, or an operator's ``http:<token>``) named
        ``by_name`` (default: ``by``)."""
        post = self._pending(post_id)
        if post is None or (chat_key is not None and post.target.chat_key != chat_key):
            return None
        if await self.scheduler.withdraw(post.job_id, kind=SCHEDULED_POSTS_KIND) is None:
            return None  # fired (a one-off) or cancelled meanwhile
        log.info("scheduled post %d cancelled chat=%s by=%s", post.id, post.target.chat_key, by)
        await self._audit(post, "cancelled", by, by if by_name is None else by_name)
        return post

    async def moved(self, old_chat_key: str, new_chat_key: str) -> int:
        """The chat ``old_chat_key`` is now ``new_chat_key`` (a Telegram group became a
        supergroup): its pending posts go on there, with their numbers and next runs. Returns
        how many moved; none the second time (Telegram tells a migration twice)."""
        count = 0
        for job in self.scheduler.pending(SCHEDULED_POSTS_KIND):
            post = ScheduledPost.from_payload(job.payload, job.next_run)
            target = post.target
            prefix = f"{target.platform}:"
            if target.chat_key != old_chat_key or not new_chat_key.startswith(prefix):
                continue
            there = replace(post, target=replace(target, chat_id=new_chat_key[len(prefix) :]))
            if post.recurrence.once:
                if not self.scheduler.cancel(post.job_id):
                    continue  # it fired meanwhile: nothing left to move
                try:
                    self._schedule(there, at=job.next_run)
                except Exception:
                    self._schedule(post, at=job.next_run)  # back where it was, not lost
                    raise
            else:
                self._schedule(there)  # the same rule again keeps its next run
            count += 1
        if count:
            log.info(
                "scheduled posts moved old=%s new=%s posts=%d", old_chat_key, new_chat_key, count
            )
        return count

    def _pending(self, post_id: int) -> ScheduledPost | None:
        job = self.scheduler.job(job_id(post_id))
        if job is None or job.kind != SCHEDULED_POSTS_KIND:
            return None
        return ScheduledPost.from_payload(job.payload, job.next_run)

    async def _create(
        self, target: PostTarget, when: str, prompt: str, by: str, by_name: str
    ) -> ScheduledPost:
        if not self.outbound.can_post_later(target.platform):
            raise ScheduleError(
                f"I can only answer on {target.platform}, never post there unasked."
            )
        if target.chat_type is ChatType.PRIVATE:
            raise ScheduleError(  # the admin API's and dashboard's words (the command's: same)
                "Scheduled posts are for group chats; in a private chat, ask me for a reminder."
            )
        text = clean_text(prompt).strip()
        if not text:
            raise ScheduleError(
                "Say what to post after a |, e.g. every monday 09:00 Europe/Berlin |"
                " summarise last week's discussion."
            )
        cap = min(self.settings.max_prompt_chars, self.service.admission.max_input_chars - _FRAME)
        if len(text) > cap:
            raise ScheduleError(f"That prompt is {len(text):,} characters; the limit is {cap:,}.")
        now = datetime.now(UTC)
        recurrence = parse_recurrence(when, default_zone=self.settings.timezone, now=now)
        here = self.listed(target.chat_key)
        if len(here) >= self.settings.max_per_chat:
            raise ScheduleError(
                f"This chat has {len(here)} scheduled posts, the most it may have; cancel one"
                " first."
            )
        post_id = await self.counter.kv_increment(KV_NAMESPACE, "next_id")
        post = ScheduledPost(post_id, target, recurrence, text, by, by_name, now)
        self._schedule(post)
        job = self.scheduler.job(post.job_id)
        log.info(
            "scheduled post %d set chat=%s thread=%s by=%s rule=%r",
            post.id, target.chat_key, target.thread_id, by, recurrence.rule(),
        )  # fmt: skip
        return ScheduledPost.from_payload(post.payload(), None if job is None else job.next_run)

    async def _audit(self, post: ScheduledPost, verb: str, actor_id: str, actor_name: str) -> None:
        recurrence, target = post.recurrence, post.target
        detail = schedule_change(verb, post.id, recurrence.rule(), post.prompt, target.thread_id)
        try:
            await self.service.store.record_change(
                target.chat_key, actor_id, actor_name, AuditAction.SCHEDULE, detail
            )
        except Exception:  # the post is set (or cancelled): an error now would invite a retry
            log.exception("audit entry not written chat=%s: %s", target.chat_key, detail)

    def _schedule(self, post: ScheduledPost, at: datetime | None = None) -> None:
        recurrence = post.recurrence
        if recurrence.once:
            when = at or recurrence.first_run()
            self.scheduler.at(SCHEDULED_POSTS_KIND, post.job_id, when, post.payload())
            return
        self.scheduler.weekly(
            SCHEDULED_POSTS_KIND,
            post.job_id,
            recurrence.days,
            recurrence.at,
            recurrence.zone,
            post.payload(),
        )

    # -- a run -----------------------------------------------------------------------------

    async def _fire(self, job: str, payload: dict[str, Any]) -> None:
        post = ScheduledPost.from_payload(payload)
        target = post.target
        if not await self._sender_ready(target.platform):
            self._put_off(post)
            return
        summary = await self.service.store.chat_summary(target.chat_key)
        ctx = post.context(summary.title if summary is not None else "")
        try:
            reply = await self.service.chat(ctx, framed(post), burst=False)  # one message
        except UserFacingError as exc:  # a spent budget, access, the model: nothing posted
            log.warning("scheduled post %d not posted chat=%s: %s", post.id, target.chat_key, exc)
            return
        text = reply.shown.strip()
        if not text:
            log.warning("scheduled post %d: the model answered nothing", post.id)
            return
        sent = await self.outbound.send(target.platform, target.chat_id, target.thread_id, text)
        if not sent:  # later prompts must not think the chat saw it
            await self.service.store.mark_undelivered(reply.turn_id, "scheduled post not sent")
        log.log(
            logging.INFO if sent else logging.WARNING,
            "scheduled post %d %s chat=%s turn=%d tokens=%d",
            post.id, "posted" if sent else "NOT posted", target.chat_key, reply.turn_id,
            reply.usage.total_tokens,
        )  # fmt: skip

    async def _sender_ready(self, platform: str) -> bool:
        """Whether ``platform``'s adapter runs here, waiting a while for it: a run missed while
        the bot was down fires as it starts, before the adapters do."""
        deadline = time.monotonic() + self.adapter_wait
        while not self.outbound.can_send(platform):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.25, self.adapter_wait))
        return True

    def _put_off(self, post: ScheduledPost) -> None:
        platform = post.target.platform
        if post.recurrence.once and post.attempts + 1 < MAX_ATTEMPTS:
            later = datetime.now(UTC) + RETRY_DELAY
            self._schedule(post.tried(), at=later)
            log.warning(
                "scheduled post %d: no running adapter for %s here; put off until %s",
                post.id, platform, later.isoformat(timespec="seconds"),
            )  # fmt: skip
            return
        log.warning(
            "scheduled post %d: no running adapter for %s here; this run is skipped",
            post.id, platform,
        )  # fmt: skip


def framed(post: ScheduledPost) -> str:
    """The run's message: what it is, so the model answers the chat rather than a person
    (the speaker tag already says which post: ``[Scheduled post #N]``)."""
    return (
        f"[Set by {post.created_by_name} to run {post.recurrence.describe()}: your answer is"
        f" posted to the chat as it is.]\n{post.prompt}"
    )
