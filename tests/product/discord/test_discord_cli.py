"""`python -m bot` with Discord enabled, as a user runs it: a real process against the fakes."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.discord_harness import GENERAL, GUILD, world
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config
from tests.waits import EXIT, STARTUP, TURN

pytestmark = pytest.mark.slow


async def test_run_answers_ask_and_a_mention_end_to_end(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    w = world(dc)
    write_config(
        tmp_path,
        "discord:\n  enabled: true\n"
        f"  api_base: {dc.api_base}\n  gateway_url: {dc.gateway_url}\n"
        f"  guild_ids: [{GUILD}]\n",
    )
    env = env_for(
        tmp_path,
        OPENAI_BASE_URL=fake_llm.base_url,
        OPENAI_API_KEY=SECRET,
        DISCORD_BOT_TOKEN=dc.token,
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
        # Start-up speed is the bench's; here only that it starts (room for a loaded machine).
        await dc.wait_until(lambda: bool(dc.commands(GUILD)), timeout=STARTUP)
        await dc.wait_ready(timeout=STARTUP)
        interaction = dc.slash(w.general, w.admin, "ask", {"prompt": "hello from a slash"})

        def answered() -> bool:
            original = dc.original(int(interaction["id"]))
            return bool(original and original["content"])

        await dc.wait_until(answered, timeout=TURN)
        dc.message(w.general, w.member, f"<@{dc.application_id}> and from a mention")
        await dc.wait_for_message(GENERAL, count=2, timeout=TURN)
        await dc.wait_idle(quiet=0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=EXIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    texts = [m["content"] for m in dc.messages(GENERAL)]
    assert texts == ["echo: [Alice] hello from a slash", "echo: [Bobby] and from a mention"]
    logs = (out + err).decode()
    assert "discord bot" in logs
    assert dc.token not in logs and SECRET not in logs


async def test_check_config_names_a_bad_discord_field(tmp_path: Path) -> None:
    write_config(tmp_path, "discord:\n  enabled: true\n  gateway_url: https://nope\n")
    env = env_for(tmp_path, OPENAI_API_KEY=SECRET, DISCORD_BOT_TOKEN="abc.def.ghi")
    code, _out, err = await run_cli("check-config", env=env)
    assert code == 2
    assert "discord" in err and "gateway_url" in err
    assert "abc.def.ghi" not in err
