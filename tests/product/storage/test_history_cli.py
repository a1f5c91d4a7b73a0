"""``history audit``, ``history export --chat/--all`` and ``history delete --user``, driven
through ``bot.cli.commands`` on a store the service filled (on SQLite, or on PostgreSQL with
``PARLOUR_TEST_STORAGE=postgres``)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import commands as cli
from bot.context import Scope
from bot.testing.fake_llm import FakeLLM
from tests import postgres_support
from tests.conftest import AppFactory, group, private

# The operator's key: no token shape, so only the config's secret list can mask it.
KEY = "parlour-operator-key-never-shared"
LLM = {"api_key": KEY}
MEMORY = {"plugins": ["plugins.memory"]}


def write_config(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    storage = (
        {"url": postgres_support.schema_url_for(tmp_path)}
        if postgres_support.e2e_on_postgres()
        else {"path": str(tmp_path / "parlour.db")}
    )
    config = {"llm": {"base_url": fake_llm.base_url, "api_key": KEY}, "storage": storage}
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def run(capsys: pytest.CaptureFixture[str], config: Path, *argv: str) -> tuple[int, str, str]:
    """``python -m bot ARGS`` as ``main`` in this process; ``main`` installs its own log handler
    (an entry point's job): the suite's are put back after it."""
    capsys.readouterr()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = await asyncio.to_thread(cli.main, ["--config", str(config), *argv])
    finally:
        root.handlers[:], root.level = handlers, level
    out, err = capsys.readouterr()
    assert KEY not in out + err
    return code, out, err


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


async def test_audit_lists_clears_resets_persona_and_scope_changes(
    make_app: AppFactory, fake_llm: FakeLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin, bob = group("1", "Alice", is_admin=True), group("2", "Bob")
    async with make_app(llm=LLM) as app:
        await app.service.chat(admin, "hello")
        await app.service.set_system_prompt(admin, "You are a pirate.\nSpeak like one, always.")
        await app.service.set_scope(admin, Scope.USER)
        await app.service.chat(bob, "ahoy")
        await app.service.reset(bob)
        await app.service.set_system_prompt(admin, None)
        await app.service.clear(admin)
        await app.service.set_scope(group("3", "Cy", chat="-200"), Scope.THREAD)
    config = write_config(tmp_path, fake_llm)

    code, out, err = await run(capsys, config, "history", "audit", "--chat", "telegram:-100")
    assert code == 0, err
    header, *rows = (re.split(r"\s{2,}", line) for line in out.splitlines())
    assert header == ["when", "chat", "action", "who", "what"]
    assert all(re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", row[0]) for row in rows)
    assert {row[1] for row in rows} == {"telegram:-100"}
    assert [row[2:] for row in rows] == [
        ["persona", "Alice (1)", 'set (41 chars): "You are a pirate. Speak like one, always."'],
        ["scope", "Alice (1)", "chat -> user"],
        ["reset", "Bob (2)", "conversation telegram:-100:u:2"],
        ["persona", "Alice (1)", "reset to the default"],
        ["clear", "Alice (1)", "deleted 2 turns, 4 messages"],
    ]
    assert err == "5 audit entries in telegram:-100\n"

    code, out, err = await run(capsys, config, "history", "audit", "--json")
    assert code == 0, err
    entries = lines(out)
    assert len(entries) == 6 and err == "6 audit entries\n"
    assert entries[-1] | {"at": 0, "time": ""} == {
        "at": 0,
        "time": "",
        "chat": "telegram:-200",
        "action": "scope",
        "actor_id": "3",
        "actor_name": "Cy",
        "detail": "chat -> thread",
        "conversation": "",
    }
    code, out, err = await run(capsys, config, "history", "audit", "--chat", "telegram:-9")
    assert (code, out, err) == (0, "", "0 audit entries in telegram:-9\n")


async def test_export_by_chat_and_all_masks_a_pasted_key(
    make_app: AppFactory, fake_llm: FakeLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = group("1", "Alice", is_admin=True)
    async with make_app(llm=LLM) as app:
        await app.service.chat(admin, f"our key is {KEY}, keep it safe")
        await app.service.set_scope(admin, Scope.USER)
        await app.service.chat(group("2", "Bob"), "my own conversation")
        await app.service.chat(private("2", "Bob"), "a private word")
        await app.service.chat(group("3", "Cy", chat="-1001"), "a chat whose id starts alike")
    config = write_config(tmp_path, fake_llm)

    code, out, err = await run(capsys, config, "history", "export", "--chat", "telegram:-100")
    assert code == 0, err
    records = lines(out)
    assert [(r["conversation"], r["turn"], r["role"]) for r in records] == [
        ("telegram:-100", records[0]["turn"], "user"),
        ("telegram:-100", records[0]["turn"], "assistant"),
        ("telegram:-100:u:2", records[2]["turn"], "user"),
        ("telegram:-100:u:2", records[2]["turn"], "assistant"),
    ]
    first, _, bob, _ = records
    assert first["content"] == "our key is ***, keep it safe"
    assert (first["user_id"], first["user_name"], first["chat"]) == ("1", "Alice", "telegram:-100")
    assert (bob["user_id"], bob["user_name"], bob["content"]) == ("2", "Bob", "my own conversation")
    assert all(r["created_at"] > 0 and r["status"] == "answered" for r in records)
    assert err == "exported 4 messages from 2 conversations\n"

    code, out, err = await run(capsys, config, "history", "export", "--all")
    assert code == 0, err
    every = lines(out)
    assert {r["chat"] for r in every} == {"telegram:-100", "telegram:-1001", "telegram:2"}
    assert len(every) == 8 and err == "exported 8 messages from 4 conversations\n"
    assert "***" in out

    code, out, err = await run(capsys, config, "history", "export", "telegram:-100")
    legacy = lines(out)  # the older form: one conversation by key, no "conversation" field
    assert code == 0 and legacy[0]["content"] == "our key is ***, keep it safe"
    assert "conversation" not in legacy[0] and len(legacy) == 2
    code, _, err = await run(capsys, config, "history", "export", "--chat", "telegram:-5")
    assert code == 1 and "no stored messages in chat 'telegram:-5'" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["export"], "needs one of KEY, --chat KEY or --all (got none)"),
        (["export", "telegram:1", "--all"], "(got KEY and --all)"),
        (["export", "--chat", "telegram:1", "--all"], "(got --chat and --all)"),
        (["delete", "--user", "telegram"], "--user must be PLATFORM:ID"),
        (["delete", "--user", ":5"], "--user must be PLATFORM:ID"),
        ([], "say which: `history list`"),
    ],
)
async def test_usage_errors_say_what_to_give(
    argv: list[str],
    says: str,
    fake_llm: FakeLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = await run(capsys, write_config(tmp_path, fake_llm), "history", *argv)
    assert code == 2 and out == ""
    assert says in err


async def test_delete_removes_a_persons_messages_and_memories_everywhere(
    make_app: AppFactory, fake_llm: FakeLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ann, bob = group("1", "Ann"), group("2", "Bob")
    async with make_app(llm=LLM, **MEMORY) as app:
        assert app.memories is not None
        await app.service.chat(ann, "I live on Elm Street")
        await app.service.chat(bob, "I live on Oak Street")
        await app.service.chat(private("1", "Ann"), "my doctor is Dr Who")
        await app.service.chat(group("1", "Ann", chat="-200"), "hello other group")
        await app.memories.add(ann, "Ann lives on Elm Street")
        await app.memories.add(private("1", "Ann"), "Ann's doctor is Dr Who")
        await app.memories.add(bob, "Bob lives on Oak Street")
    config = write_config(tmp_path, fake_llm)

    code, out, err = await run(capsys, config, "history", "delete", "--user", "telegram:1")
    assert code == 1 and out == ""
    assert "--yes" in err  # stdin is no terminal: refused, nothing deleted
    code, out, _ = await run(capsys, config, "history", "export", "--all")
    assert "Elm Street" in out

    argv = ("history", "delete", "--user", "telegram:1", "--yes")
    code, out, err = await run(capsys, config, *argv)
    assert code == 0, err
    report = {line.split(None, 1)[1]: int(line.split()[0]) for line in out.splitlines()[1:]}
    assert out.splitlines()[0] == "telegram:1:"
    assert report["turns deleted (their messages with the answers to them)"] == 3
    assert report["messages in those turns"] == 6
    assert report["memories deleted (their own and private ones)"] == 2
    assert report["conversations that lost messages (summaries rebuilt)"] == 3
    assert report["usage-ledger rows kept (tokens were spent), name blanked"] == 3

    code, out, err = await run(capsys, config, "history", "export", "--all")
    assert code == 0, err
    left = lines(out)
    assert [r["content"] for r in left if r["role"] == "user"] == ["I live on Oak Street"]
    assert "Elm" not in out and "Dr Who" not in out and "other group" not in out
    async with make_app(llm=LLM, **MEMORY) as app:
        assert app.memories is not None
        kept = await app.store.list_memories("telegram:-100")
        assert [m.text for m in kept] == ["Bob lives on Oak Street"]
        assert await app.store.list_memories("telegram:1") == []
        usage = {row.user_id: row for row in await app.store.daily_usage("2000-01-01")}
        assert usage["1"].user_name == "" and usage["1"].usage.total_tokens > 0
        assert usage["2"].user_name == "Bob"

    code, out, err = await run(capsys, config, *argv, "--json")
    assert code == 0, err
    again = json.loads(out)
    assert again["user"] == "telegram:1"
    assert (again["turns"], again["memories"], again["usage_rows"]) == (0, 0, 3)


class Terminal(io.StringIO):
    """A person at a terminal typing ``answer``."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code", "left"), [("no\n", 1, 2), ("yes\n", 0, 0)])
async def test_delete_at_a_terminal_asks_first(
    answer: str,
    code: int,
    left: int,
    make_app: AppFactory,
    fake_llm: FakeLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with make_app(llm=LLM) as app:
        await app.service.chat(private("1", "Ann"), "forget me")
    config = write_config(tmp_path, fake_llm)
    monkeypatch.setattr(sys, "stdin", Terminal(answer))
    got, _, err = await run(capsys, config, "history", "delete", "--user", "telegram:1")
    assert got == code
    assert "Type 'yes' to go on" in err
    _, out, _ = await run(capsys, config, "history", "export", "--all")
    assert len(lines(out)) == left


async def test_only_real_scope_changes_are_audited(make_app: AppFactory) -> None:
    admin = group("1", "Alice", is_admin=True)
    async with make_app() as app:
        await app.service.set_scope(admin, Scope.CHAT)  # already the default: no change
        await app.service.set_scope(admin, Scope.THREAD)
        await app.service.set_system_prompt(admin, "x" * 200)
        entries = await app.store.audit("telegram:-100")
    assert [(e.action.value, e.detail) for e in entries] == [
        ("scope", "chat -> thread"),
        ("persona", 'set (200 chars): "' + "x" * 59 + '…"'),
    ]
