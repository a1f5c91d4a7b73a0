"""Failure drills (issue 7): the real bot process, against the fakes, when things go wrong.

Each drill runs ``python -m bot`` with Telegram enabled, the fake Bot API and the fake LLM in this
process, breaks something (kill -9, a dead or hanging provider, a 429 storm, SIGTERM mid-answer)
and checks what users see in their chats and what the history file holds afterwards. The bot
logs at DEBUG into a file, and every drill scans that file for the Telegram token and the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import pytest_asyncio

from bot.config.conversation import ChatSettings
from bot.errors import LLMUnavailableError
from bot.testing.fake_llm import FakeLLM, RecordedRequest, hang, rate_limited, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config
from tests.secret_scan import find_secrets
from tests.waits import EXIT, STARTUP, TURN

pytestmark = pytest.mark.slow

# A token of the real shape, so the output scan checks the token pattern as well as the value.
TOKEN = "7104428391:AAG3xq0TpLw8ZkYv2NcRb5HsUe9JdMfQa1o"
UNAVAILABLE = LLMUnavailableError.chat_text


@pytest_asyncio.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN) as fake:
        yield fake


@dataclass
class BotProcess:
    """One ``python -m bot`` run; its stdout and stderr go to ``log`` (a pipe could fill up)."""

    proc: asyncio.subprocess.Process
    log: Path

    @property
    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    @property
    def exited(self) -> bool:
        return self.proc.returncode is not None

    async def terminate(self, timeout: float = EXIT) -> int:  # noqa: ASYNC109
        """SIGTERM, then the exit code once the process has finished on its own."""
        self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def kill(self) -> None:
        self.proc.kill()
        await self.proc.wait()


def _log_file(path: Path) -> IO[bytes]:
    """Opened outside the event loop's code path (a file, not a pipe: nobody must drain it)."""
    return path.open("wb")


@asynccontextmanager
async def bot_process(
    tmp_path: Path, tg: FakeTelegram, base_url: str, *, name: str = "bot"
) -> AsyncIterator[BotProcess]:
    """Start the bot and wait until it polls; kill it if still running, then scan its output."""
    env = env_for(
        tmp_path,
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=SECRET,
        TELEGRAM_BOT_TOKEN=tg.token,
    )
    log = tmp_path / f"{name}.log"
    with _log_file(log) as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", stdout=sink, stderr=sink, env=env
        )
    bot = BotProcess(proc, log)
    polls = sum(c.method == "getUpdates" for c in tg.calls)
    try:
        await tg.wait_until(
            lambda: sum(c.method == "getUpdates" for c in tg.calls) > polls or bot.exited,
            timeout=STARTUP,
            what="the bot to poll",
        )
        assert proc.returncode is None, f"the bot exited at startup:\n{bot.output}"
        yield bot
    finally:
        if proc.returncode is None:
            await bot.kill()
    secrets = [tg.token.split(":")[1], SECRET]
    leaks = find_secrets(bot.output, secrets)
    assert not leaks, f"secrets in the bot's output: {leaks}"
    posted = json.dumps([c.params for c in tg.calls], ensure_ascii=False)
    leaks = find_secrets(posted, secrets)  # error texts shown to users included
    assert not leaks, f"secrets in what the bot sent to Telegram: {leaks}"


def configure(tmp_path: Path, tg: FakeTelegram, llm: str = "") -> None:
    """Telegram on (fake Bot API), DEBUG logs (the most there is to leak), plus ``llm:`` lines."""
    text = f"telegram:\n  enabled: true\n  api_server: {tg.api_server}\nlogging:\n  level: DEBUG\n"
    write_config(tmp_path, text + (f"llm:\n{llm}" if llm else ""))


async def until(predicate: Callable[[], bool], what: str, timeout: float = TURN) -> None:  # noqa: ASYNC109
    """Poll for something the fake LLM records (it has no change notification)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


def turns(tmp_path: Path) -> list[dict[str, Any]]:
    """The history file as a user would inspect it: every turn row, oldest first."""
    with contextlib.closing(sqlite3.connect(tmp_path / "bot.db")) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM turns ORDER BY id").fetchall()
    return [dict(row) for row in rows]


def deliveries(tmp_path: Path) -> list[dict[str, Any]]:
    """Replies being delivered, as recorded for the next start should the process die."""
    with contextlib.closing(sqlite3.connect(tmp_path / "bot.db")) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM deliveries ORDER BY id")]


def integrity(tmp_path: Path) -> str:
    """``PRAGMA integrity_check`` of the history file ("ok" when sound)."""
    with contextlib.closing(sqlite3.connect(tmp_path / "bot.db")) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def asking(fake: FakeLLM, text: str) -> list[RecordedRequest]:
    """Chat requests whose newest message is the user message containing ``text``."""
    return [
        r
        for r in fake.chat_requests
        if r.json["messages"][-1]["role"] == "user" and text in r.json["messages"][-1]["content"]
    ]


def assert_well_formed(messages: Sequence[dict[str, Any]]) -> None:
    """What the provider needs from a history: system prompt(s) first, the user's message
    last, every tool call answered right after it, no tool result without its call, and no
    empty assistant message (the mark of an answer written half-way)."""
    roles = [m["role"] for m in messages]
    leading = next(i for i, role in enumerate(roles) if role != "system")
    assert leading >= 1 and "system" not in roles[leading:], roles
    assert roles[-1] == "user", roles
    open_calls: set[str] = set()
    for message in messages[leading:]:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, messages
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"tool calls left unanswered: {open_calls}"
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            assert calls or (message.get("content") or "").strip(), messages
            open_calls = {c["id"] for c in calls}
    assert not open_calls


def free_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ----------------------------------------------------------------------------- drill 1


async def test_kill_9_mid_turn_leaves_a_history_the_next_process_can_use(
    fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path
) -> None:
    fake_llm.api_key = SECRET
    fake_llm.script(hang())  # the first answer never comes: the bot dies waiting for it
    configure(tmp_path, tg)
    group = tg.group(-1001, "Team", supergroup=True)
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")

    async with bot_process(tmp_path, tg, fake_llm.base_url, name="first") as bot:
        question = tg.send(group, alice, "@parlour_bot what is the plan?")
        await until(lambda: bool(fake_llm.chat_requests), "the model call")
        await until(lambda: bool(deliveries(tmp_path)), "the reply to be recorded")
        # Confirmed by the next getUpdates, so the restart cannot replay it: the drill is the
        # same on every run.
        await tg.wait_until(lambda: not tg.pending_updates, what="the update to be confirmed")
        await bot.kill()
        assert bot.proc.returncode == -signal.SIGKILL

    assert integrity(tmp_path) == "ok"
    interrupted = [t for t in turns(tmp_path) if "what is the plan" in t["user_text"]]
    assert len(interrupted) <= 1
    for turn in interrupted:  # written or not, never with half an answer
        assert turn["status"] in ("pending", "unanswered")
        assert turn["answer"] is None
    assert tg.messages(group["id"]) == []

    async with bot_process(tmp_path, tg, fake_llm.base_url, name="second") as bot:
        # Nothing was shown before the crash: the question is told, in reply, that it was cut.
        [notice] = await tg.wait_for_message(group["id"], timeout=TURN)
        assert "[interrupted" in notice["text"] and "ask again" in notice["text"]
        assert notice["reply_to_message"]["message_id"] == question["message_id"]
        tg.send(group, bob, "@parlour_bot are you back?")
        await tg.wait_for_message(group["id"], count=2, timeout=TURN)
        await tg.wait_idle(quiet=0.3)
        assert [m["text"] for m in tg.messages(group["id"])][1:] == ["echo: [Bob] are you back?"]
        assert await bot.terminate() == 0

    [request] = asking(fake_llm, "are you back?")
    messages = request.json["messages"]
    assert_well_formed(messages)
    assert sum("what is the plan" in str(m.get("content")) for m in messages) == len(interrupted)
    assert integrity(tmp_path) == "ok"
    final = {t["user_text"]: t for t in turns(tmp_path)}
    assert final["are you back?"]["status"] == "answered"
    if interrupted:  # closed at once: the process that began it is gone
        assert (final["what is the plan?"]["status"], final["what is the plan?"]["error"]) == (
            "unanswered",
            "interrupted",
        )
    assert deliveries(tmp_path) == []  # done once
    # The export a bot owner would hand over carries no key either (run_cli scans its output).
    code, exported, err = await run_cli(
        "history", "export", "telegram:-1001", env=env_for(tmp_path, OPENAI_API_KEY=SECRET)
    )
    assert code == 0, err
    assert "are you back?" in exported
    assert json.loads(final["are you back?"]["answer"])[-1]["content"] == (
        "echo: [Bob] are you back?"
    )


# ----------------------------------------------------------------------------- drill 2


@pytest.mark.parametrize(
    ("outage", "one_group"),
    [("closed port", False), ("accepts, never answers", False), ("accepts, never answers", True)],
)
async def test_llm_down_every_user_is_told_within_the_deadline(
    outage: str, one_group: bool, fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path
) -> None:
    """With ``one_group``, everyone shares one conversation and queues behind its lock: the
    circuit breaker tells those after the first at once instead of a deadline each."""
    deadline = 3.0
    if outage == "closed port":
        base_url = f"http://127.0.0.1:{free_port()}/v1"
    else:
        base_url = fake_llm.base_url
        fake_llm.api_key = SECRET
        fake_llm.script(*[hang()] * 20)  # more than 5 users x their attempts
    configure(
        tmp_path,
        tg,
        f"  deadline: {deadline}\n  timeout: 2\n"
        "  retry: {max_attempts: 3, base_delay: 0.1, max_delay: 0.2}\n",
    )
    people = [tg.user(100 + i, f"User{i}") for i in range(5)]
    shared = tg.group(-2100, "Everyone", supergroup=True)
    chats = [
        shared
        if one_group
        else tg.group(-2000 - i, f"Group {i}")
        if i % 2
        else tg.private_chat(user)
        for i, user in enumerate(people)
    ]
    async with bot_process(tmp_path, tg, base_url) as bot:
        sent_at: dict[tuple[int, int], float] = {}  # (chat, trigger message) -> when
        for i, (chat, user) in enumerate(zip(chats, people, strict=True)):
            prefix = "@parlour_bot " if chat["type"] != "private" else ""
            trigger = tg.send(chat, user, f"{prefix}question {i}")
            sent_at[chat["id"], trigger["message_id"]] = time.monotonic()
        await tg.wait_until(
            lambda: sum(len(tg.messages(c)) for c in {c["id"] for c in chats}) >= len(people),
            timeout=deadline + 15,
            what="an answer to everyone",
        )
        await tg.wait_idle(quiet=0.3)
        notices = [c for c in tg.calls if c.method == "sendMessage"]
        assert [c.params["text"] for c in notices] == [UNAVAILABLE] * len(people)
        for notice in notices:
            chat_id = int(notice.params["chat_id"])
            quoted = (notice.params.get("reply_parameters") or {}).get("message_id")
            [(key, at)] = [
                (k, t) for k, t in sent_at.items() if k[0] == chat_id and quoted in (None, k[1])
            ]
            # the model is asked once the burst window (default) passed without more messages
            assert notice.at - at < ChatSettings().burst_window + deadline + 3, key
            del sent_at[key]
        assert await bot.terminate() == 0

    assert integrity(tmp_path) == "ok"
    stored = {t["user_text"]: t for t in turns(tmp_path)}
    # Those in flight when the outage was found are kept as unanswered; in the shared group the
    # ones queued behind the first were told at once, before anything of theirs was stored.
    if one_group:
        assert sorted(stored) == ["question 0"]
    else:  # usually all five; one that arrived after the first failure was told at once
        assert stored and set(stored) <= {f"question {i}" for i in range(5)}
    assert {(t["status"], t["answer"]) for t in stored.values()} == {("unanswered", None)}


# ----------------------------------------------------------------------------- drill 3


async def test_a_429_storm_still_answers_everyone(
    fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path
) -> None:
    fake_llm.api_key = SECRET
    fake_llm.fail_every(2, rate_limited(retry_after=0.2))  # half of all calls, retries too
    # Retries wait the same Retry-After, so they come back in waves that halve (10, 5, 2, 1
    # failures): the unluckiest message loses about log2(20) + 1 draws in a row, which the
    # default retry.max_rate_limited_attempts (10) absorbs.
    configure(tmp_path, tg)
    count = 20
    people = [tg.user(300 + i, f"Member{i}") for i in range(count)]
    chats = [
        tg.group(-3000 - i, f"Room {i}") if i % 2 else tg.private_chat(user)
        for i, user in enumerate(people)
    ]
    expected: dict[int, str] = {}
    async with bot_process(tmp_path, tg, fake_llm.base_url) as bot:
        for i, (chat, user) in enumerate(zip(chats, people, strict=True)):
            if chat["type"] == "private":
                tg.send(chat, user, f"storm {i}")
                expected[chat["id"]] = f"echo: storm {i}"
            else:
                tg.send(chat, user, f"@parlour_bot storm {i}")
                expected[chat["id"]] = f"echo: [Member{i}] storm {i}"
        await tg.wait_until(
            lambda: all(
                [m.get("text") for m in tg.messages(chat_id)] == [text]
                for chat_id, text in expected.items()
            ),
            timeout=TURN,
            what="every chat's answer",
        )
        await tg.wait_idle(quiet=0.3)
        assert {c: [m.get("text") for m in tg.messages(c)] for c in expected} == {
            c: [text] for c, text in expected.items()
        }
        assert await bot.terminate() == 0

    # 20 successes with every 2nd call refused: 39 or 40 calls, so about 20 were 429s.
    assert len(fake_llm.chat_requests) >= 2 * count - 1
    assert {t["status"] for t in turns(tmp_path)} == {"answered"}


# ----------------------------------------------------------------------------- drill 4


async def test_sigterm_delivers_the_answer_in_flight_then_exits_0(
    fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path
) -> None:
    fake_llm.api_key = SECRET
    fake_llm.latency = 1.5
    configure(tmp_path, tg)
    group = tg.group(-4001, "Ops", supergroup=True)
    async with bot_process(tmp_path, tg, fake_llm.base_url) as bot:
        tg.send(group, tg.user(9, "Carol"), "@parlour_bot deploy status?")
        await until(lambda: bool(fake_llm.chat_requests), "the model call")
        assert tg.messages(group["id"]) == []  # the answer is still being written
        code = await bot.terminate()
        assert code == 0, bot.output
        assert [m["text"] for m in tg.messages(group["id"])] == ["echo: [Carol] deploy status?"]

    assert integrity(tmp_path) == "ok"
    [turn] = turns(tmp_path)
    assert turn["status"] == "answered"
    assert json.loads(turn["answer"]) == [
        {"role": "assistant", "content": "echo: [Carol] deploy status?"}
    ]


# ----------------------------------------------------------------------------- drill 5


async def test_kill_9_mid_stream_marks_the_preview_interrupted_after_restart(
    fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path
) -> None:
    fake_llm.api_key = SECRET
    story = " ".join(f"word{n}" for n in range(300))
    fake_llm.stream_interval = 0.1  # half a minute of streaming: the bot dies long before
    fake_llm.script(reply(story))
    configure(tmp_path, tg)
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)

    def preview() -> dict[str, Any] | None:
        shown = tg.messages(chat["id"])
        return shown[0] if shown else None

    async with bot_process(tmp_path, tg, fake_llm.base_url, name="first") as bot:
        tg.send(chat, alice, "tell me a long story")
        await tg.wait_until(
            lambda: (p := preview()) is not None and len(tg.edits(chat["id"], p["message_id"])) > 1,
            timeout=TURN,
            what="the preview to be edited",
        )
        await tg.wait_until(lambda: not tg.pending_updates, what="the update to be confirmed")
        await bot.kill()
    cut = preview()
    assert cut is not None and cut["text"].endswith(" …")  # the streaming cursor, left behind
    [turn] = turns(tmp_path)
    assert (turn["status"], turn["answer"]) == ("pending", None)

    async with bot_process(tmp_path, tg, fake_llm.base_url, name="second") as bot:
        await tg.wait_until(
            lambda: "[interrupted" in (preview() or {}).get("text", ""),
            timeout=TURN,
            what="the preview to be marked",
        )
        await tg.wait_idle(quiet=0.3)
        assert await bot.terminate() == 0

    [marked] = tg.messages(chat["id"])
    assert marked["message_id"] == cut["message_id"]  # edited in place, nothing new posted
    words, _, mark = marked["text"].partition(" [interrupted")
    assert "restarted" in mark and "ask again" in mark
    assert words.split() == story.split()[: len(words.split())]  # the partial text, kept
    assert len(words.split()) >= 2
    assert len(fake_llm.chat_requests) == 1  # the question was not run again
    [turn] = turns(tmp_path)
    assert (turn["status"], turn["error"], turn["answer"]) == ("unanswered", "interrupted", None)
    assert deliveries(tmp_path) == []  # done once
    assert integrity(tmp_path) == "ok"
