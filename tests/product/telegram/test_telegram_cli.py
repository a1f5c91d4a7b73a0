"""`python -m bot` with Telegram enabled, as a user runs it: a real process against the fakes."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config
from tests.waits import EXIT, STARTUP, TURN

pytestmark = pytest.mark.slow


async def test_run_answers_a_group_mention_end_to_end(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    write_config(tmp_path, f"telegram:\n  enabled: true\n  api_server: {tg.api_server}\n")
    env = env_for(
        tmp_path,
        OPENAI_BASE_URL=fake_llm.base_url,
        OPENAI_API_KEY=SECRET,
        TELEGRAM_BOT_TOKEN=tg.token,
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        # Start-up speed is the bench's (section 12); here only that it starts (tests/waits.py).
        await tg.wait_until(
            lambda: any(c.method == "getUpdates" for c in tg.calls), timeout=STARTUP, what="a poll"
        )
        alice = tg.user(7, "Alice")
        group = tg.group(-100, "Team", supergroup=True)
        tg.send(group, alice, "@parlour_bot hello from the group")
        await tg.wait_for_message(group["id"], timeout=TURN)
        await tg.wait_idle(quiet=0.5)
        [answer] = tg.messages(group["id"])
        assert answer["text"] == "echo: [Alice] hello from the group"
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=EXIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    logs = (out + err).decode()
    assert "telegram bot @parlour_bot" in logs
    assert tg.token.split(":")[1] not in logs and SECRET not in logs
    assert any(c.method == "deleteWebhook" for c in tg.calls)
    assert {
        c.params.get("scope", {}).get("type") for c in tg.calls if c.method == "setMyCommands"
    } == {
        "all_private_chats",
        "all_group_chats",
        "all_chat_administrators",
    }


async def test_check_config_names_a_bad_telegram_field(tmp_path: Path) -> None:
    write_config(tmp_path, "telegram:\n  enabled: true\n  mode: carrier-pigeon\n")
    env = env_for(tmp_path, OPENAI_API_KEY=SECRET, TELEGRAM_BOT_TOKEN="123:abc-def")
    code, _out, err = await run_cli("check-config", env=env)
    assert code == 2
    assert "telegram.mode" in err
    assert "abc-def" not in err
