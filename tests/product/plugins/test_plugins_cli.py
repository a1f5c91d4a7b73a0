"""The built-in plugins through the console, as a user runs it: `python -m bot chat` with piped
input, the fake LLM scripted to call the tools (the issue's "done when")."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

pytestmark = pytest.mark.slow


async def test_console_time_calculation_and_reminder(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path)  # no plugins: key, so the built-in set is on
    fake_llm.script(
        tool_calls(("current_time", {"timezone": "Asia/Tokyo"})),
        reply("It is evening in Tokyo."),
        tool_calls(("calculate", {"expression": "2**10 * 3"})),
        reply("2**10 * 3 is 3072."),
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 1})),
        reply("I'll remind you in a minute to stretch."),
    )
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    lines = "what time is it in Tokyo\nwhat is 2**10 * 3\nremind me in 1 minute to stretch\n"
    code, out, err = await run_cli("chat", env=env, stdin=lines)
    assert code == 0, err
    assert "[using current_time]" in out and "It is evening in Tokyo." in out
    assert "[using calculate]" in out and "3072" in out
    assert "[using set_reminder]" in out and "remind you in a minute" in out
    tool_messages = [
        m["content"]
        for request in fake_llm.chat_requests
        for m in request.json["messages"]
        if m["role"] == "tool"
    ]
    assert any("Asia/Tokyo" in t and "UTC+09:00" in t for t in tool_messages)
    assert "2**10 * 3 = 3072" in tool_messages
    assert any(t.startswith("Reminder #1 set for") for t in tool_messages)
    with sqlite3.connect(tmp_path / "bot.db") as db:
        [(value,)] = db.execute("SELECT value FROM plugin_kv WHERE key LIKE 'reminder:%'")
    assert json.loads(value)["text"] == "stretch"
    assert (tmp_path / "bot.jobs.sqlite").exists()  # the scheduler's own file
