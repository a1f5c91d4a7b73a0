"""Section 16: what group-chat behaviour costs in model calls and tokens (issue 30).

* **Bursts**: one person in a group sends 3, then 10 messages 0.3 s apart, each addressed to the
  bot, with a 0.5 s model; ``chat.burst_window`` at its default (2 s) against 0 (every message
  its own turn). Per run: model calls, prompt and completion tokens the fake reported, the
  seconds from the last message to the last answer, and the answers posted.
* **Flood**: 1,000 messages from one person as fast as the event loop takes them, at the default
  limits (10 a minute, a burst of 5, one answer at a time and 3 waiting): model calls and
  tokens, messages stored.
* **Catch-up**: ``/catchup`` over 1,000 stored group messages (several speakers) at the default
  ``catchup`` settings: model calls (map steps and the reduce) and tokens.

All through ``ChatService`` (the path every adapter takes) against the fake OpenAI-compatible
server in this process, on SQLite. ``python -m bench.group_chats`` runs it alone.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.chat_texts import user_messages
from bench.common import Row, make_settings
from bench.rows import S16
from bot.app import App
from bot.context import ChatContext, ChatType
from bot.errors import UserFacingError
from bot.testing.fake_llm import FakeLLM

LATENCY = 0.5
CATCHUP_MESSAGES = 1000
GAP = 0.3
DEFAULT_LIMITS: dict[str, Any] = {
    "messages_per_minute": 10,
    "burst": 5,
    "one_in_flight": True,
    "max_queued": 3,
}


@dataclass(frozen=True, slots=True)
class Cost:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # from the last message to the last answer
    answers: int
    stored: int = 0
    widest: int = 0  # the largest prompt of one call (catch-up)


def _member(n: int, name: str = "Alice") -> ChatContext:
    return ChatContext("telegram", "-100", ChatType.GROUP, "7", name, message_id=str(n))


def _tokens(fake: FakeLLM) -> tuple[int, int]:
    prompt = completion = 0
    for request in fake.chat_requests:
        usage = request.usage or {}
        prompt += usage.get("prompt_tokens", 0)
        completion += usage.get("completion_tokens", 0)
    return prompt, completion


async def _burst(root: Path, fake: FakeLLM, count: int, window: float, name: str) -> Cost:
    settings = make_settings(
        fake.base_url, root / f"{name}.db", chat={"burst_window": window}, limits=DEFAULT_LIMITS
    )
    fake.requests.clear()
    async with App(settings) as app:
        tasks = []
        for n in range(count):
            tasks.append(asyncio.ensure_future(app.service.chat(_member(n), f"part {n} of it")))
            await asyncio.sleep(GAP)
        last = time.monotonic()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        seconds = time.monotonic() - last
        stored = (await app.store.stats("telegram:-100")).turns_stored
    answers = sum(not isinstance(o, BaseException) for o in outcomes)
    prompt, completion = _tokens(fake)
    return Cost(len(fake.chat_requests), prompt, completion, seconds, answers, stored)


async def _flood(root: Path, fake: FakeLLM) -> Cost:
    settings = make_settings(
        fake.base_url, root / "flood.db", chat={"burst_window": 2.0}, limits=DEFAULT_LIMITS
    )
    fake.requests.clear()
    async with App(settings) as app:
        started = time.monotonic()
        tasks = [
            asyncio.ensure_future(app.service.chat(_member(n), f"spam {n}")) for n in range(1000)
        ]
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        seconds = time.monotonic() - started
        stored = (await app.store.stats("telegram:-100")).turns_stored
    unexpected = [
        o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, UserFacingError)
    ]
    if unexpected:
        raise unexpected[0]
    answers = sum(not isinstance(o, BaseException) for o in outcomes)
    prompt, completion = _tokens(fake)
    return Cost(len(fake.chat_requests), prompt, completion, seconds, answers, stored)


async def _catchup(root: Path, fake: FakeLLM, name: str, catchup: dict[str, Any]) -> Cost:
    """1,000 group messages by five people, overheard at the default settings (the prompts
    show the newest 20; the rest is kept *passed* for /catchup), then a catch-up of the last
    1,000 by a sixth, at ``catchup`` settings."""
    settings = make_settings(fake.base_url, root / f"{name}.db", catchup=catchup)
    people = ("Ann", "Bo", "Cy", "Dee", "Eli")
    async with App(settings) as app:
        for n, text in enumerate(user_messages(CATCHUP_MESSAGES, seed=30)):
            speaker = ChatContext("telegram", "-100", ChatType.GROUP, str(n % 5), people[n % 5])
            await app.service.overhear(speaker, text)
        fake.requests.clear()
        asker = ChatContext("telegram", "-100", ChatType.GROUP, "99", "Fay")
        assert app.catchup is not None, "catchup.enabled is on by default"
        started = time.monotonic()
        report = await app.catchup.for_operator(asker, "telegram:-100", messages=CATCHUP_MESSAGES)
        seconds = time.monotonic() - started
    prompt, completion = _tokens(fake)
    widest = max((r.usage or {}).get("prompt_tokens", 0) for r in fake.chat_requests)
    return Cost(len(fake.chat_requests), prompt, completion, seconds, 1, report.messages, widest)


async def measure_group_chats(root: Path) -> dict[str, Cost]:
    figures: dict[str, Cost] = {}
    async with FakeLLM(latency=LATENCY) as fake:
        for count in (3, 10):
            for window in (2.0, 0.0):
                name = f"burst-{count}-{window:g}"
                figures[name] = await _burst(root, fake, count, window, name)
        figures["flood"] = await _flood(root, fake)
        figures["catchup"] = await _catchup(root, fake, "catchup", {})
        whole = {"max_input_tokens": 100_000}  # every one of the 1,000 read
        figures["catchup-all"] = await _catchup(root, fake, "catchup-all", whole)
    return figures


def group_chat_rows(figures: dict[str, Cost]) -> list[Row]:
    rows: list[Row] = []
    for count in (3, 10):
        on, off = figures[f"burst-{count}-2"], figures[f"burst-{count}-0"]
        rows.append(
            Row(
                S16,
                f"burst of {count} messages {GAP:g} s apart, {LATENCY:g} s model, default"
                " limits (the rate takes 5 at once): `chat.burst_window` 2 s / 0",
                f"{on.calls} / {off.calls} model calls; {on.prompt_tokens:,} / "
                f"{off.prompt_tokens:,} prompt + {on.completion_tokens:,} / "
                f"{off.completion_tokens:,} completion tokens; {on.answers} / {off.answers}"
                f" answers; last answer {on.seconds:.1f} / {off.seconds:.1f} s after the"
                " last message",
                "one call a burst (window on)",
                on.calls == 1,
            )
        )
    flood = figures["flood"]
    rows.append(
        Row(
            S16,
            "1,000 messages from one person at once, default limits (burst 5, 3 waiting)",
            f"{flood.calls} model calls, {flood.prompt_tokens:,} prompt + "
            f"{flood.completion_tokens:,} completion tokens, {flood.answers} answers,"
            f" {flood.stored} turns stored, {flood.seconds:.1f} s",
            "<= limits.burst (5) calls",
            flood.calls <= 5,
        )
    )
    catchup = figures["catchup"]
    rows.append(
        Row(
            S16,
            f"/catchup over {CATCHUP_MESSAGES:,} stored group messages (5 speakers), default"
            " `catchup` settings (24,000 tokens read at most, 3,000 a call, 400 written)",
            f"{catchup.calls} model calls, {catchup.prompt_tokens:,} prompt + "
            f"{catchup.completion_tokens:,} completion tokens; {catchup.stored:,} newest"
            f" messages read; the largest call {catchup.widest:,} prompt tokens;"
            f" {catchup.seconds:.1f} s",
            "each call <= 3,000 + its instructions (300) in",
            catchup.widest <= 3300,
        )
    )
    whole = figures["catchup-all"]
    rows.append(
        Row(
            S16,
            f"the same, `catchup.max_input_tokens: 100000`: all {CATCHUP_MESSAGES:,} read",
            f"{whole.calls} model calls, {whole.prompt_tokens:,} prompt + "
            f"{whole.completion_tokens:,} completion tokens; {whole.stored:,} messages read;"
            f" the largest call {whole.widest:,} prompt tokens; {whole.seconds:.1f} s",
            "all read; each call <= 3,300 in",
            whole.stored == CATCHUP_MESSAGES and whole.widest <= 3300,
        )
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from bench.table import machine_line, render

    del argv
    with tempfile.TemporaryDirectory(prefix="parlour-bench-") as tmp:
        figures = asyncio.run(measure_group_chats(Path(tmp)))
    print(machine_line())
    print()
    print(render(group_chat_rows(figures)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
