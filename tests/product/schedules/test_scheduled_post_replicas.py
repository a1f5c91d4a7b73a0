"""A weekly scheduled post with two replicas: real ``python -m bot run`` processes on one
PostgreSQL database, Telegram webhooks behind a round-robin balancer (the fake Bot API posts to
it), the fake LLM shared by both.

An admin sets ``/schedule every <today> <in a few seconds> UTC | ...`` in a group: the post
reaches the group once (one model request, one message), fired by one replica. A second weekly
post falls due while both replicas are stopped: at their next start it is posted once, and the
first is still scheduled, a week on.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.config.storage_url import parse_storage_url
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.drills.test_drills import TOKEN, free_port
from tests.drills.test_replica_drills import BotProcess, bot_run, serving, webhook_lines
from tests.postgres_support import HOW_TO_RUN, fresh_pg_url, pg_base_url
from tests.product.app.test_cli import SECRET
from tests.product.schedules.test_schedule_command_telegram import soon
from tests.telegram_balancer import balancer
from tests.waits import STARTUP, TURN

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(pg_base_url() is None, reason=HOW_TO_RUN),
]

SETTLE = 4.0  # seconds: a few lease renewals and polls, for "nothing else fired"
AHEAD = 15.0  # seconds from setting a post to its run: the command's round trip fits in it


def replica_config(home: Path, url: str, tg: FakeTelegram, webhook: str) -> None:
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(
        f"storage:\n  url: '{url}'\n  path: {home / 'unused.db'}\n"
        "  scheduler_lease_seconds: 3\n"
        "limits:\n  messages_per_minute: null\n  one_in_flight: false\n"
        "memory:\n  enabled: false\n"
        f"telegram:\n  enabled: true\n  api_server: {tg.api_server}\n  stream: false\n"
        + webhook
        + "logging:\n  level: INFO\n",
        encoding="utf-8",
    )


def scheduled_jobs(url: str) -> dict[str, datetime]:
    """The shared job table's scheduled posts and their next runs, read as an operator would."""
    where = parse_storage_url(url)
    assert where.dsn is not None
    with psycopg.connect(where.dsn) as conn:
        rows = conn.execute(
            f'SELECT id, next_run_time FROM "{where.schema}".apscheduler_jobs'
            " WHERE id LIKE 'schedules:%' ORDER BY id"
        )
        return {str(i): datetime.fromtimestamp(float(t), UTC) for i, t in rows}


async def until(predicate: Any, what: str, timeout: float, *show: BotProcess) -> None:  # noqa: ASYNC109
    """Poll ``predicate``; on a timeout the failure quotes the end of each ``show`` log."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            logs = "".join(f"\n--- replica {i}:\n{p.output[-4000:]}" for i, p in enumerate(show))
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{logs}")
        await asyncio.sleep(0.1)


async def test_a_weekly_post_fires_once_across_two_replicas_and_survives_a_restart(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.api_key = SECRET
    url = fresh_pg_url()
    ports = [free_port(), free_port()]
    async with FakeTelegram(token=TOKEN) as tg, balancer(ports) as lb:
        admin = tg.user(7, "Alice")
        chat = tg.group(-500, "Team")
        tg.set_member(chat["id"], admin["id"], "administrator")
        group = chat["id"]

        def texts() -> list[str]:
            return [m.get("text", "") for m in tg.messages(group)]

        def runs_of(post: int) -> int:
            marker = f"[Scheduled post #{post}] [Set by "
            return sum(
                marker in str(r.json["messages"][-1].get("content")) for r in fake_llm.chat_requests
            )

        homes = [tmp_path / f"replica{i}" for i in range(2)]
        for i, home in enumerate(homes):
            replica_config(home, url, tg, webhook_lines(lb, ports[i]))
        async with bot_run(homes[0], tg, fake_llm) as a, bot_run(homes[1], tg, fake_llm) as b:
            await until(lambda: serving(a) and serving(b), "both replicas to serve", STARTUP, a, b)
            fake_llm.script(reply("Last week: the release was agreed for Friday."))
            tg.send(chat, admin, f"/schedule {soon(AHEAD)} | summarise last week's discussion")
            await until(
                lambda: any("Scheduled post #1" in t for t in texts()), "#1 set", TURN, a, b
            )
            await until(
                lambda: "Last week: the release was agreed for Friday." in texts(),
                "the weekly post",
                AHEAD + TURN,
                a,
                b,
            )
            await asyncio.sleep(SETTLE)
            assert texts().count("Last week: the release was agreed for Friday.") == 1
            assert runs_of(1) == 1
            fired = [p for p in (a, b) if "scheduled post 1 posted" in p.output]
            assert len(fired) == 1, (a.output, b.output)

            # a second weekly post, due while both replicas are down
            tg.send(chat, admin, f"/schedule {soon(AHEAD)} | ask the question of the week")
            due = time.monotonic() + AHEAD
            await until(
                lambda: any("Scheduled post #2" in t for t in texts()), "#2 set", TURN, a, b
            )
            await asyncio.gather(a.terminate(), b.terminate())
            assert time.monotonic() < due, "the replicas took too long to stop"
            assert "scheduled post 2 posted" not in a.output + b.output
        await asyncio.sleep(max(0.0, due - time.monotonic()) + 1.0)

        fake_llm.script(reply("Question of the week: what should we build next?"))
        again = [tmp_path / f"again{i}" for i in range(2)]
        for i, home in enumerate(again):
            replica_config(home, url, tg, webhook_lines(lb, ports[i]))
        async with bot_run(again[0], tg, fake_llm) as a, bot_run(again[1], tg, fake_llm) as b:
            await until(
                lambda: "Question of the week: what should we build next?" in texts(),
                "the post missed while down",
                STARTUP + TURN,
                a,
                b,
            )
            await asyncio.sleep(SETTLE)
            assert texts().count("Question of the week: what should we build next?") == 1
            assert texts().count("Last week: the release was agreed for Friday.") == 1
            assert (runs_of(1), runs_of(2)) == (1, 1)
            jobs = scheduled_jobs(url)
            assert sorted(jobs) == ["schedules:1", "schedules:2"]  # both still weekly
            week_on = datetime.now(UTC) + timedelta(days=6)
            assert all(next_run > week_on for next_run in jobs.values()), jobs

            tg.send(chat, admin, "/schedule list")
            await until(
                lambda: texts()[-1].startswith("Scheduled posts here (2)"), "list", TURN, a, b
            )
            assert "#1 every " in texts()[-1] and "#2 every " in texts()[-1]
