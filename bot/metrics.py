"""The bot's Prometheus metrics: one registry per :class:`~bot.app.App`, served at ``/metrics``.

A registry of its own (not ``prometheus_client``'s global one), so two apps in one process (the
tests) count apart. Labels are bounded on purpose: platforms, outcomes, error classes, models
and tool sources from config, never a chat id, a user id or a message. Recording a figure never
raises into a turn: a broken metric is logged once and the turn goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from bot.values import Usage

__all__ = ["Metrics", "error_kind", "turn_outcome"]

log = logging.getLogger(__name__)

_LATENCY = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_WAITS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60)


class Metrics:
    """Counters and histograms of one running bot; every method is safe to call anywhere."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._turns = Counter(
            "parlour_turns",
            "Messages handled, by platform and outcome",
            ["platform", "outcome"],
            registry=r,
        )
        self._llm_seconds = Histogram(
            "parlour_llm_request_seconds",
            "Time to the model's answer (a stream: until it opened), retries included",
            ["model"],
            buckets=_LATENCY,
            registry=r,
        )
        self._llm_errors = Counter(
            "parlour_llm_errors", "Model calls that failed for good, by kind", ["kind"], registry=r
        )
        self._tokens = Counter(
            "parlour_tokens",
            "Tokens the model reported (cached: part of prompt)",
            ["kind"],
            registry=r,
        )
        self._queue = Histogram(
            "parlour_queue_wait_seconds",
            "Time a message waited for its conversation or for an LLM slot",
            ["queue"],
            buckets=_WAITS,
            registry=r,
        )
        self._platform_errors = Counter(
            "parlour_platform_errors",
            "Messages a platform did not take (send failures), by error class",
            ["platform", "kind"],
            registry=r,
        )
        self._tool_calls = Counter(
            "parlour_tool_calls",
            "Tool calls by source and outcome",
            ["source", "outcome"],
            registry=r,
        )
        self._mcp = Gauge(
            "parlour_mcp_servers",
            "MCP servers by state (at the last scrape)",
            ["state"],
            registry=r,
        )
        self._broken = False

    # -- recording (never raises) -----------------------------------------------------------

    def turn(self, platform: str, outcome: str) -> None:
        self._safely(lambda: self._turns.labels(platform, outcome).inc())

    def llm_call(self, model: str, seconds: float) -> None:
        self._safely(lambda: self._llm_seconds.labels(model).observe(seconds))

    def llm_error(self, exc: BaseException) -> None:
        self._safely(lambda: self._llm_errors.labels(error_kind(exc)).inc())

    def tokens(self, usage: Usage | None) -> None:
        if usage is None:
            return

        def add() -> None:
            self._tokens.labels("prompt").inc(max(0, usage.prompt_tokens))
            self._tokens.labels("completion").inc(max(0, usage.completion_tokens))
            self._tokens.labels("cached").inc(max(0, usage.cached_tokens))

        self._safely(add)

    def queue_wait(self, queue: str, seconds: float) -> None:
        self._safely(lambda: self._queue.labels(queue).observe(max(0.0, seconds)))

    def platform_error(self, platform: str, exc: BaseException) -> None:
        self._safely(lambda: self._platform_errors.labels(platform, type(exc).__name__).inc())

    def tool_call(self, source: str, outcome: str) -> None:
        self._safely(lambda: self._tool_calls.labels(source, outcome).inc())

    def mcp_states(self, states: list[str]) -> None:
        """Set the gauge from the servers' states now (every known state, zero when none)."""

        def update() -> None:
            for state in ("starting", "ready", "retrying", "stopped", *states):
                self._mcp.labels(state).set(states.count(state))

        self._safely(update)

    def exposition(self) -> bytes:
        """The Prometheus text format of every figure."""
        return generate_latest(self.registry)

    def _safely(self, record: Callable[[], object]) -> None:
        try:
            record()
        except Exception:  # a metric must never fail a turn
            if not self._broken:
                self._broken = True
                log.exception("metrics: recording failed (logged once)")


def error_kind(exc: BaseException) -> str:
    """``busy``, ``quota``, ``auth``, ``unavailable``, ``bad_request``, ``context_length``
    for the model's errors (bot.errors); ``other`` for anything else."""
    from bot import errors

    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (errors.LLMContextLengthError, "context_length"),
        (errors.LLMBadRequestError, "bad_request"),
        (errors.LLMBusyError, "busy"),
        (errors.LLMQuotaError, "quota"),
        (errors.LLMAuthError, "auth"),
        (errors.LLMUnavailableError, "unavailable"),
        (errors.ContextTooLongError, "context_length"),
    )
    for cls, kind in kinds:
        if isinstance(exc, cls):
            return kind
    return "other"


def turn_outcome(exc: BaseException | None) -> str:
    """``answered``; ``refused`` (admission, budgets, a message too long or media refused);
    ``unanswered`` (the model or the bot failed); ``cancelled`` (the caller went away)."""
    from bot.errors import LLMError, UserFacingError

    if exc is None:
        return "answered"
    if isinstance(exc, LLMError):
        return "unanswered"
    if isinstance(exc, UserFacingError):
        return "refused"
    if isinstance(exc, Exception):
        return "unanswered"
    return "cancelled"
