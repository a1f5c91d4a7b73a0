"""Section 9: how much of each prompt a provider's prefix cache can reuse (issue 15).

One long console conversation per scenario, through the real console adapter
(``ConsoleAdapter.handle``: the streamed path a user at the terminal takes) against the
latency-0 fake LLM in this process, which emulates OpenAI's prefix cache. The user's messages
and the model's replies come from :mod:`bench.chat_texts` (seeded: the same bytes every run).
Per scenario, over the chat requests of the turns (the compactor's summarising calls are left
out of the shares and counted apart):

* **prefix share**: for each request n >= 2, the length of the longest common prefix of its
  canonical form and request n-1's (tools, then messages, as the fake's cache compares them:
  :func:`bot.testing.llm.prompt_cache.canonical_prompt`), over request n's length; the mean
  and the 10th percentile;
* **cached-token share**: sum(cached_tokens) / sum(prompt_tokens) as the fake reported them
  (``usage.prompt_tokens_details.cached_tokens``: 128-token steps, nothing under 1,024);
* **input tokens billed per turn**: the mean of prompt_tokens (no cache), and of
  (prompt_tokens - cached) + 0.1 x cached (a 90 % discount on cached input, as DeepSeek and
  Anthropic bill it; OpenAI's discount is 50-90 %).

``python -m bench.prompt_cache`` runs this section alone and prints its rows.
"""

from __future__ import annotations

import asyncio
import io
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.console import ConsoleAdapter
from bench.chat_texts import fake_reply, is_summary_request, user_messages
from bench.common import API_KEY, MODEL, Row
from bench.rows import S9
from bot.app import App
from bot.config import Settings, settings_from_mapping
from bot.testing.fake_llm import FakeLLM
from bot.testing.llm.prompt_cache import canonical_prompt, common_prefix_length

CACHE_DISCOUNT = 0.9  # cached input billed at 10 % of the price
SEED = 15
FULL_WINDOW = 50  # history.max_turns by default: from turn 52 on, the turn count cuts too


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    turns: int
    config: dict[str, dict[str, Any]]  # on top of the defaults
    target: float  # prefix share


SCENARIOS = (
    Scenario("default config", 200, {}, 0.90),
    Scenario(
        "`llm.context_window: 4000`, memory on, `memory.summarize: true`",
        150,
        {"llm": {"context_window": 4000}, "memory": {"enabled": True, "summarize": True}},
        0.85,
    ),
)


@dataclass(slots=True)
class CacheFigures:
    scenario: Scenario
    prefix_shares: list[float] = field(default_factory=list)  # one per request from the 2nd
    prompt_tokens: list[int] = field(default_factory=list)  # one per turn
    cached_tokens: list[int] = field(default_factory=list)
    summary_calls: int = 0
    failures: list[str] = field(default_factory=list)  # turns whose answer was not the model's

    @property
    def prefix_share(self) -> float:
        return statistics.fmean(self.prefix_shares) if self.prefix_shares else float("nan")

    @property
    def steady_share(self) -> float:
        """The mean past ``history.max_turns`` (shares[i] is request i + 2's)."""
        steady = self.prefix_shares[FULL_WINDOW:]
        return statistics.fmean(steady) if steady else float("nan")

    @property
    def prefix_p10(self) -> float:
        if len(self.prefix_shares) < 2:
            return float("nan")
        return statistics.quantiles(self.prefix_shares, n=10, method="inclusive")[0]

    @property
    def cached_share(self) -> float:
        total = sum(self.prompt_tokens)
        return sum(self.cached_tokens) / total if total else float("nan")

    @property
    def billed_full(self) -> float:
        return statistics.fmean(self.prompt_tokens) if self.prompt_tokens else float("nan")

    @property
    def billed_discounted(self) -> float:
        if not self.prompt_tokens:
            return float("nan")
        billed = [
            (p - c) + (1 - CACHE_DISCOUNT) * c
            for p, c in zip(self.prompt_tokens, self.cached_tokens, strict=True)
        ]
        return statistics.fmean(billed)

    @property
    def cuts(self) -> int:
        """Requests sharing under half of their text with the one before: the prompt broke."""
        return sum(1 for share in self.prefix_shares if share < 0.5)


def scenario_settings(base_url: str, db_path: Path, scenario: Scenario) -> Settings:
    """The shipped defaults (plugins, memory, ``history.max_turns`` 50, ...) on the fake."""
    raw: dict[str, Any] = {
        "llm": {"base_url": base_url, "api_key": API_KEY, "model": MODEL},
        "storage": {"path": str(db_path)},
    }
    for name, values in scenario.config.items():
        raw[name] = {**raw.get(name, {}), **values}
    return settings_from_mapping(raw)


async def _compaction_done(app: App) -> None:
    """Let a background summary finish before the next message, as a user's pause would: the
    run is then the same every time. (Reads the compactor's task table: bench-only.)"""
    compactor = app.compactor
    while compactor is not None and compactor._tasks:
        await asyncio.gather(*compactor._tasks.values(), return_exceptions=True)


async def measure_scenario(root: Path, scenario: Scenario) -> CacheFigures:
    figures = CacheFigures(scenario)
    texts = user_messages(scenario.turns, SEED)
    previous: str | None = None
    async with FakeLLM(default_reply=fake_reply) as fake:
        settings = scenario_settings(fake.base_url, root / "chat.db", scenario)
        async with App(settings) as app:
            out = io.StringIO()
            console = ConsoleAdapter(app.platform, stdin=io.StringIO(), stdout=out)
            for n, text in enumerate(texts, 1):
                out.seek(0)
                out.truncate()
                await console.handle(text)
                await _compaction_done(app)
                turn = [r for r in fake.chat_requests if not is_summary_request(r.json)]
                figures.summary_calls += len(fake.chat_requests) - len(turn)
                fake.requests.clear()
                if not turn or turn[-1].usage is None or out.getvalue().startswith("\n["):
                    figures.failures.append(f"turn {n}: {out.getvalue()[:120]!r}")
                    continue
                for record in turn:  # one request per turn unless the model called tools
                    prompt = canonical_prompt(record.json)
                    if previous is not None:
                        shared = common_prefix_length(prompt, previous)
                        figures.prefix_shares.append(shared / len(prompt))
                    previous = prompt
                    assert record.usage is not None
                    figures.prompt_tokens.append(int(record.usage["prompt_tokens"]))
                    figures.cached_tokens.append(record.cached_tokens or 0)
    return figures


async def measure_prompt_cache(root: Path) -> list[CacheFigures]:
    figures = []
    for i, scenario in enumerate(SCENARIOS, 1):
        (root / f"prompt-cache-{i}").mkdir()
        figures.append(await measure_scenario(root / f"prompt-cache-{i}", scenario))
    return figures


def prompt_cache_rows(figures: Sequence[CacheFigures]) -> list[Row]:
    """Per scenario: how much of each prompt repeats the last one, what the fake's cache
    reused, and the input tokens a turn is billed with and without a cache discount."""
    rows: list[Row] = []
    for f in figures:
        s = f.scenario
        rows += [
            Row(
                S9,
                f"{s.turns} console turns, {s.name}: prefix share (common prefix with the"
                " previous request / request length), mean",
                f"{f.prefix_share:.3f}",  # 0.8995 must not read as 0.90
                f">= {s.target:.2f}",
                f.prefix_share >= s.target,
            ),
            Row(
                S9,
                f"... mean of turns {FULL_WINDOW + 2}-{s.turns} (past `history.max_turns`);"
                " 10th percentile of all; requests sharing under half with the previous one",
                f"{f.steady_share:.2f}; {f.prefix_p10:.2f}; {f.cuts}/{len(f.prefix_shares)}",
            ),
            Row(
                S9,
                "... cached-token share reported by the fake (sum cached / sum prompt tokens)",
                f"{f.cached_share:.2f}",
            ),
            Row(
                S9,
                f"... input tokens billed per turn: no cache / cached at {CACHE_DISCOUNT:.0%} off",
                f"{f.billed_full:,.0f} / {f.billed_discounted:,.0f}",
            ),
        ]
        if f.summary_calls:
            rows.append(
                Row(S9, "... summarising calls (not in the figures above)", str(f.summary_calls))
            )
        if f.failures:
            rows.append(
                Row(
                    S9,
                    "turns not answered by the model",
                    f"{len(f.failures)}: {f.failures[0]}",
                    "0",
                    False,
                )
            )
    return rows


def main() -> int:
    from bench.table import machine_line, render

    with tempfile.TemporaryDirectory(prefix="parlour-bench-") as tmp:
        figures = asyncio.run(measure_prompt_cache(Path(tmp)))
    print(machine_line())
    print()
    print(render(prompt_cache_rows(figures)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
