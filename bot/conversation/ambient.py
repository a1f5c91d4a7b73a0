"""Ambient mode: answering a group message that is not addressed to the bot, when it is clearly
meant for it, within a budget of unprompted answers.

Off by default; on in a chat whose ``chats:`` preset says ``ambient: true``, or where an admin
said ``/ambient on`` (which, like ``/ambient off``, overrides the preset and is audited). For
each unaddressed group message with text in such a chat the adapter asks :meth:`Ambient.decide`:

1. **stop** — a short message with a stop phrase that names the bot, or follows its unprompted
   answer within ``ambient.follow_up`` seconds, starts the cool-down (``ambient.cooldown``);
   an addressed one ("@bot shut up", a reply to it) does too (:meth:`Ambient.addressed`).
2. **rules** (:mod:`bot.conversation.ambient_rules`) — its name said to it; a question from
   someone it answered within ``follow_up`` seconds; a question replying to a message it
   answered within them. Anything else is chatter.
3. **limits** (:mod:`bot.conversation.ambient_limits`) — not during a cool-down, never two
   unaddressed messages in a row, at most ``ambient.max_per_hour`` per chat; not when a daily
   token budget is spent (the answer would only be a refusal).
4. **classifier**, if ``ambient.classifier_model`` is set
   (:mod:`bot.conversation.ambient_classifier`): the model's probability of yes must reach
   ``ambient.classifier_threshold``.

A yes makes the adapter answer the message as if it were addressed: the normal turn, with its
admission, rate limits, budgets and history. Every decision is logged (chat, message, person,
decision, reason; never the text) and counted in ``parlour_ambient_decisions_total``.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import Settings
from bot.context import ChatContext
from bot.conversation.ambient_classifier import Classifier
from bot.conversation.ambient_limits import HOUR, AmbientLimits, Clock, LimitsStatus
from bot.conversation.ambient_rules import (
    Reason,
    called_by_name,
    is_question,
    names_in,
    says_stop,
)
from bot.conversation.preferences import Preferences
from bot.conversation.presets import ChatPresets
from bot.guardrails.access import AccessPolicy
from bot.guardrails.budgets import Budgets, BudgetSpentError
from bot.metrics import Metrics
from bot.storage.audit import AuditTrail
from bot.storage.coordination import SharedLimits
from bot.storage.owners import new_owner
from bot.values import AuditAction

__all__ = ["Ambient", "AmbientStatus"]

log = logging.getLogger(__name__)

ANSWER = "answer"
SILENT = "silent"


@dataclass(frozen=True, slots=True)
class AmbientStatus:
    """What ``/ambient status`` shows."""

    on: bool
    source: str  # "chat" (/ambient), "preset" (chats:) or "default" (off)
    limits: LimitsStatus
    max_per_hour: int
    classifier: str | None  # the model asked, None: the rules alone


class Ambient:
    """The service's ambient mode: on or off per chat, the decision, and what it remembers."""

    def __init__(
        self,
        settings: Settings,
        presets: ChatPresets,
        prefs: Preferences,
        audit: AuditTrail,
        access: AccessPolicy,
        budgets: Budgets,
        *,
        classifier: Classifier | None = None,
        metrics: Metrics | None = None,
        clock: Clock | None = None,
        shared: SharedLimits | None = None,
    ) -> None:
        """``shared``: the database's limits when replicas share it: the hourly cap then
        holds across them (:meth:`_an_hours_place`)."""
        config = self.config = settings.ambient
        self.shared = shared
        self._owner = new_owner()
        self._claims = itertools.count(1)
        self.presets = presets
        self.prefs = prefs
        self.audit = audit
        self.access = access
        self.budgets = budgets
        self.classifier = classifier
        self.metrics = metrics
        self.limits = AmbientLimits(
            config.max_per_hour, config.cooldown, config.follow_up, clock=clock or time.monotonic
        )

    # -- on or off -------------------------------------------------------------------------------

    def source(self, ctx: ChatContext) -> str:
        """Who decided: ``chat`` (an admin's /ambient), ``preset`` (on there) or ``default``."""
        if self.prefs.ambient_override(ctx.chat_key) is not None:
            return "chat"
        return "preset" if self.presets.ambient(ctx) else "default"

    def enabled(self, ctx: ChatContext) -> bool:
        """On in this group: an admin's ``/ambient`` here, else its preset (off by default)."""
        if ctx.is_private:
            return False
        override = self.prefs.ambient_override(ctx.chat_key)
        return self.presets.ambient(ctx) if override is None else override

    async def set(self, ctx: ChatContext, on: bool | None) -> None:
        """Turn it on or off here (None: back to the preset's), audited with who did it."""
        before = self.enabled(ctx)
        await self.prefs.set_ambient(ctx.chat_key, on)
        after = self.enabled(ctx)
        detail = f"{_word(before)} -> {_word(after)}" + (" (the preset's)" if on is None else "")
        await self.audit.record_change(
            ctx.chat_key, ctx.user_id, ctx.user_name, AuditAction.AMBIENT, detail
        )

    def status(self, ctx: ChatContext) -> AmbientStatus:
        return AmbientStatus(
            self.enabled(ctx),
            self.source(ctx),
            self.limits.status(ctx.chat_key),
            self.config.max_per_hour,
            self.classifier.model if self.classifier is not None else None,
        )

    # -- one message -------------------------------------------------------------------------------

    async def decide(self, ctx: ChatContext, text: str, names: Sequence[str] = ()) -> bool:
        """Whether to answer this unaddressed group message (``names``: the bot's names on
        its platform). False without a decision where ambient mode is off."""
        if not text.strip() or not self.enabled(ctx) or not self.access.allows(ctx):
            return False
        every_name = (*names, *self.config.names)
        chat = ctx.chat_key
        named = names_in(text, every_name)
        if says_stop(text, self.config.stop_phrases, every_name) and (
            named or self.limits.just_spoke_unprompted(chat)
        ):
            self.limits.stop(chat)
            return self._silent(ctx, Reason.STOP)
        reason = self._rule(ctx, text, every_name, named)
        if reason is None:
            return self._silent(ctx, Reason.CHATTER)
        refused = self.limits.refusal(chat)
        if refused is not None:
            return self._silent(ctx, refused, reason)
        try:
            await self.budgets.check(ctx)
        except BudgetSpentError:
            return self._silent(ctx, Reason.BUDGET, reason)
        if self.classifier is not None:
            chance = await self.classifier.probability(ctx, text, every_name, reason)
            if chance is None:
                return self._silent(ctx, Reason.CLASSIFIER_FAILED, reason)
            if chance < self.config.classifier_threshold:
                return self._silent(ctx, Reason.CLASSIFIER, reason, chance)
            refused = self.limits.refusal(chat)  # others may have spent it while we asked
            if refused is not None:
                return self._silent(ctx, refused, reason)
        if self.shared is not None and not await self._an_hours_place(chat):
            return self._silent(ctx, Reason.HOURLY_CAP, reason)  # the other replicas spent it
        self.limits.spend(chat, ctx.message_id)
        self._log(ctx, ANSWER, reason)
        return True

    async def _an_hours_place(self, chat_key: str) -> bool:
        """One of the chat's ``max_per_hour`` places, each held for an hour once taken, in
        the shared database: at most that many unprompted answers in any hour, whichever
        replicas give them (a row per place; a few round trips, only for a candidate)."""
        shared, owner = self.shared, f"{self._owner}#{next(self._claims)}"
        assert shared is not None, "asked only with replicas"
        for place in range(self.config.max_per_hour):
            claimed, _ = await shared.claim_flight(f"ambient:{chat_key}#{place}", owner, HOUR)
            if claimed:
                return True
        return False

    def addressed(self, ctx: ChatContext, text: str) -> None:
        """A message addressed to the bot (an @mention, a reply, ``/ask``): a stop in it
        starts the cool-down, where ambient mode is on."""
        if not self.enabled(ctx) or not says_stop(text, self.config.stop_phrases):
            return
        self.limits.stop(ctx.chat_key)
        log.info(
            "ambient cool-down chat=%s message=%s user=%s reason=stop (addressed)",
            ctx.chat_key,
            ctx.message_id,
            ctx.user_id,
        )

    def answered(self, ctx: ChatContext) -> None:
        """The bot answered this message: its author's follow-ups, and replies to it, count."""
        if not ctx.is_private and self.enabled(ctx):
            self.limits.answered(ctx.chat_key, ctx.user_id, ctx.message_id)

    def _rule(
        self, ctx: ChatContext, text: str, names: tuple[str, ...], named: bool
    ) -> Reason | None:
        if named and called_by_name(text, names):
            return Reason.NAME
        if not is_question(text, self.config.question_words):
            return None
        if self.limits.in_exchange(ctx.chat_key, ctx.user_id):
            return Reason.FOLLOW_UP
        if self.limits.of_exchange(ctx.chat_key, ctx.reply_to_message_id):
            return Reason.REPLY
        return None

    def _silent(
        self,
        ctx: ChatContext,
        reason: Reason,
        rule: Reason | None = None,
        chance: float | None = None,
    ) -> bool:
        self.limits.left(ctx.chat_key)
        self._log(ctx, SILENT, reason, rule, chance)
        return False

    def _log(
        self,
        ctx: ChatContext,
        decision: str,
        reason: Reason,
        rule: Reason | None = None,
        chance: float | None = None,
    ) -> None:
        log.info(
            "ambient %s chat=%s message=%s user=%s reason=%s%s%s",
            decision,
            ctx.chat_key,
            ctx.message_id,
            ctx.user_id,
            reason.value,
            f" rule={rule.value}" if rule is not None else "",
            f" p={chance:.2f}" if chance is not None else "",
        )
        if self.metrics is not None:
            self.metrics.ambient_decision(decision, reason.value)


def _word(on: bool) -> str:
    return "on" if on else "off"
