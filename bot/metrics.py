"""The bot's Prometheus metrics: one set per :class:`~bot.app.App`, served at ``/metrics``.

Each app counts apart (two apps in one process, the tests, do not share figures). Labels are
bounded on purpose: platforms, outcomes, error classes, models and tool sources from config,
never a chat id, a user id or a message. Recording a figure never raises into a turn: a broken
metric is logged once and the turn goes on.

Figures are kept as plain numbers in dictionaries, recorded on the event loop's thread; the
Prometheus client is imported only when they are scraped (:meth:`Metrics.exposition`), which
renders them in its text format. A bot that serves no ``/metrics`` (Telegram only, say) never
loads it (issue 31), and recording costs a dictionary update.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from bot.values import Usage

__all__ = ["Metrics", "error_kind", "turn_outcome"]

log = logging.getLogger(__name__)

_LATENCY = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_WAITS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60)

Labels = tuple[str, ...]


@dataclass(slots=True)
class _Family:
    """One metric: its samples by label values, as the scrape renders them."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    kind: str  # "counter", "gauge" or "histogram"
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds (+Inf is implied)
    values: dict[Labels, float] = field(default_factory=dict)  # counter, gauge
    counts: dict[Labels, list[int]] = field(default_factory=dict)  # histogram, per bucket
    sums: dict[Labels, float] = field(default_factory=dict)  # histogram
    created: dict[Labels, float] = field(default_factory=dict)  # counter, histogram

    def inc(self, labels: Labels, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: counters only go up ({amount})")
        values = self.values
        if labels not in values:
            self.created[labels] = time.time()
            values[labels] = 0.0
        values[labels] += amount

    def set(self, labels: Labels, value: float) -> None:
        self.values[labels] = float(value)

    def observe(self, labels: Labels, value: float) -> None:
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.counts[labels] = [0] * (len(self.buckets) + 1)
            self.sums[labels] = 0.0
            self.created[labels] = time.time()
        counts[bisect.bisect_left(self.buckets, value)] += 1  # le: the first bound >= value
        self.sums[labels] += value

    def metric(self) -> Metric:
        """This family as the Prometheus client renders it (imported here, on a scrape)."""
        from prometheus_client.metrics_core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )
        from prometheus_client.samples import Sample
        from prometheus_client.utils import floatToGoString

        names = list(self.labels)
        if self.kind == "gauge":
            gauge = GaugeMetricFamily(self.name, self.documentation, labels=names)
            for labels, value in self.values.items():
                gauge.add_metric(labels, value)
            return gauge
        if self.kind == "counter":
            counter = CounterMetricFamily(self.name, self.documentation, labels=names)
            for labels, value in self.values.items():
                counter.add_metric(labels, value, created=self.created[labels])
            return counter
        histogram = HistogramMetricFamily(self.name, self.documentation, labels=names)
        bounds = [*map(floatToGoString, self.buckets), "+Inf"]
        for labels, counts in self.counts.items():
            running, buckets = 0, []
            for bound, count in zip(bounds, counts, strict=True):
                running += count
                buckets.append((bound, float(running)))
            histogram.add_metric(labels, buckets, self.sums[labels])
            named = dict(zip(names, labels, strict=True))
            created = Sample(f"{self.name}_created", named, self.created[labels])
            histogram.samples.append(created)
        return histogram


class _Collector:
    """What a scrape's registry asks for: every family, rendered then."""

    def __init__(self, families: list[_Family]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        for family in self._families:
            yield family.metric()


class Metrics:
    """Counters and histograms of one running bot; every method is safe to call anywhere."""

    def __init__(self) -> None:
        self._turns = _Family(
            "parlour_turns",
            "Messages handled, by platform and outcome",
            ("platform", "outcome"),
            "counter",
        )
        self._llm_seconds = _Family(
            "parlour_llm_request_seconds",
            "Time to the model's answer (a stream: until it opened), retries included",
            ("model",),
            "histogram",
            buckets=tuple(map(float, _LATENCY)),
        )
        self._llm_errors = _Family(
            "parlour_llm_errors", "Model calls that failed for good, by kind", ("kind",), "counter"
        )
        self._tokens = _Family(
            "parlour_tokens",
            "Tokens the model reported (cached: part of prompt)",
            ("kind",),
            "counter",
        )
        self._queue = _Family(
            "parlour_queue_wait_seconds",
            "Time a message waited for its conversation or for an LLM slot",
            ("queue",),
            "histogram",
            buckets=tuple(map(float, _WAITS)),
        )
        self._platform_errors = _Family(
            "parlour_platform_errors",
            "Messages a platform did not take (send failures), by error class",
            ("platform", "kind"),
            "counter",
        )
        self._tool_calls = _Family(
            "parlour_tool_calls",
            "Tool calls by source and outcome",
            ("source", "outcome"),
            "counter",
        )
        self._mcp = _Family(
            "parlour_mcp_servers", "MCP servers by state (at the last scrape)", ("state",), "gauge"
        )
        self._ambient = _Family(
            "parlour_ambient_decisions",
            "Unaddressed group messages ambient mode answered or left, by reason",
            ("decision", "reason"),
            "counter",
        )
        self._families = [
            self._turns,
            self._llm_seconds,
            self._llm_errors,
            self._tokens,
            self._queue,
            self._platform_errors,
            self._tool_calls,
            self._mcp,
            self._ambient,
        ]
        self._broken = False

    # -- recording (never raises) -----------------------------------------------------------

    def turn(self, platform: str, outcome: str) -> None:
        self._safely(lambda: self._turns.inc((str(platform), str(outcome))))

    def llm_call(self, model: str, seconds: float) -> None:
        self._safely(lambda: self._llm_seconds.observe((str(model),), float(seconds)))

    def llm_error(self, exc: BaseException) -> None:
        self._safely(lambda: self._llm_errors.inc((error_kind(exc),)))

    def tokens(self, usage: Usage | None) -> None:
        if usage is None:
            return

        def add() -> None:
            self._tokens.inc(("prompt",), max(0, usage.prompt_tokens))
            self._tokens.inc(("completion",), max(0, usage.completion_tokens))
            self._tokens.inc(("cached",), max(0, usage.cached_tokens))

        self._safely(add)

    def queue_wait(self, queue: str, seconds: float) -> None:
        self._safely(lambda: self._queue.observe((str(queue),), max(0.0, float(seconds))))

    def platform_error(self, platform: str, exc: BaseException) -> None:
        self._safely(lambda: self._platform_errors.inc((str(platform), type(exc).__name__)))

    def tool_call(self, source: str, outcome: str) -> None:
        self._safely(lambda: self._tool_calls.inc((str(source), str(outcome))))

    def ambient_decision(self, decision: str, reason: str) -> None:
        """``answer`` or ``silent``, and why (``bot.conversation.ambient_rules.Reason``)."""
        self._safely(lambda: self._ambient.inc((str(decision), str(reason))))

    def mcp_states(self, states: list[str]) -> None:
        """Set the gauge from the servers' states now (every known state, zero when none)."""

        def update() -> None:
            for state in ("starting", "ready", "retrying", "stopped", *states):
                self._mcp.set((str(state),), states.count(state))

        self._safely(update)

    def exposition(self) -> bytes:
        """The Prometheus text format of every figure."""
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self._families))
        return generate_latest(registry)

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
    """``answered``; ``folded`` (answered with an earlier message of its burst); ``refused``
    (admission, budgets, a message too long or media refused); ``unanswered`` (the model or
    the bot failed); ``cancelled`` (the caller went away)."""
    from bot.errors import LLMError, MessageFolded, UserFacingError

    if exc is None:
        return "answered"
    if isinstance(exc, MessageFolded):
        return "folded"
    if isinstance(exc, LLMError):
        return "unanswered"
    if isinstance(exc, UserFacingError):
        return "refused"
    if isinstance(exc, Exception):
        return "unanswered"
    return "cancelled"
