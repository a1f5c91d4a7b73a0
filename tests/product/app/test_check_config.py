"""``check-config`` prints only what validated, and no secret however it was misplaced.

Every case runs the CLI's ``main`` as ``python -m bot`` would (in-process: tests.cli_harness).
``run_cli`` already fails a test whose output holds an OpenAI-, Telegram- or Discord-shaped token;
each test also names its own values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

TELEGRAM = "5550123456:AAF9x-TypoedTokenValue_0123456789abcd"
DISCORD = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.x9Yz-abcdefghijklmnopqrstuvw_0123"
OPENAI = "sk-proj-Zx81mQ0pLr55vTt2Ww9kJh3NgQ"
NUMBER = "31415926535897932384"
PASSWORD = "pw-Storage-7731"
PROXY_PASSWORD = "pw-Proxy-9044"
PLUGIN_SECRET = "zq8Kp2-plugin-value-misplaced"
ZONE_SECRET = "correct-horse-battery-staple"


async def check_config(tmp_path: Path, text: str, **env: str) -> tuple[int, str]:
    write_config(tmp_path, text)
    code, out, err = await run_cli("check-config", env=env_for(tmp_path, **env))
    assert "Traceback" not in err
    return code, out + err


@pytest.mark.parametrize("enabled", [False, True])
async def test_a_mistyped_key_is_named_never_shown(tmp_path: Path, enabled: bool) -> None:
    text = f"telegram:\n  enabled: {str(enabled).lower()}\n  tokn: '{TELEGRAM}'\n"
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert "unknown key telegram.tokn" in output
    assert TELEGRAM.split(":")[1] not in output and "tokn:" not in output
    assert code == (2 if enabled else 0)  # a disabled section's problems are warnings


async def test_a_token_of_the_wrong_type_is_not_dumped(tmp_path: Path) -> None:
    text = (
        f"telegram:\n  token: {NUMBER}\ndiscord:\n  enabled: true\n  token:\n    value: {DISCORD}\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 2
    assert "discord.token" in output and "telegram.token" in output
    assert DISCORD not in output and DISCORD.split(".")[2] not in output
    assert NUMBER not in output


async def test_a_key_under_an_unknown_top_level_key(tmp_path: Path) -> None:
    code, output = await check_config(tmp_path, f"openai_key: {OPENAI}\n")
    assert code == 2
    assert "unknown key openai_key" in output
    assert OPENAI not in output and OPENAI[3:] not in output


async def test_passwords_in_urls_are_masked(tmp_path: Path) -> None:
    text = (
        f"storage:\n  path: postgres://bob:{PASSWORD}@db.example/parlour\n"
        f"telegram:\n  api_server: https://proxy:{PROXY_PASSWORD}@tg.example\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 0, output
    assert "config OK" in output
    assert "db.example/parlour" in output and "tg.example" in output  # the rest still shows
    assert PASSWORD not in output and PROXY_PASSWORD not in output


async def test_plugin_settings_are_validated_before_they_are_shown(tmp_path: Path) -> None:
    text = (
        "plugins:\n"
        "  - module: tests.sample_plugins.toolbox\n"
        f"    settings: {{greeting: Ahoy, api_kee: {PLUGIN_SECRET}}}\n"
        "  - module: plugins.clock\n"
        f"    settings: {{timezone: {ZONE_SECRET}}}\n"  # its validator echoes the value
        "  - module: plugins.calculator\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 0, output  # a plugin that fails is left out at start: a warning
    assert "api_kee" in output and "timezone" in output  # the problems are named
    assert PLUGIN_SECRET not in output and ZONE_SECRET not in output
    assert "plugins.calculator" in output and "config OK" in output


async def test_a_required_plugin_that_fails_is_an_error(tmp_path: Path) -> None:
    text = (
        f"plugins:\n  - module: plugins.clock\n    required: true\n    settings: {{tz: {OPENAI}}}\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 2
    assert "plugins.clock" in output and "tz" in output
    assert OPENAI not in output


async def test_http_tokens_are_masked_and_the_section_shown_as_validated(tmp_path: Path) -> None:
    admin, chat = "adm-check-config-value-1", "cht-check-config-value-2"
    text = (
        f"http:\n  enabled: true\n  admin_tokens:\n    ops: '{admin}'\n  chat_tokens: ['{chat}']\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 0, output
    assert admin not in output and chat not in output
    assert "listen_host: 127.0.0.1" in output  # the validated form, defaults included
    assert "ops:" in output and "token-1:" in output
    text = "http:\n  enabled: true\n  admin_tokens: {ops: tiny-tok-9}\n"
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 2 and "shorter than 16 characters" in output
    assert "tiny-tok-9" not in output


async def test_a_preset_for_a_platform_or_bot_nobody_runs_is_a_warning(tmp_path: Path) -> None:
    text = (
        f"telegram:\n  enabled: true\n  token: '{TELEGRAM}'\n"
        "  bots:\n    - name: quiz\n      token: '123456789:AAquizquizquizquizquizquizquiz'\n"
        "chats:\n"
        "  - match: ['telegram.quiz:*', 'telegram.quizz:*']\n"
        "  - match: 'telgram:-100'\n"
        "  - match: ['*:private', 'telegram:-100', 'discord:guild:1']\n"
    )
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET)
    assert code == 0, output
    assert "chats.0.match.1 names no platform or bot of this config ('telegram.quizz')" in output
    assert "chats.1.match.0 names no platform or bot of this config ('telgram')" in output
    assert "chats.2" not in output.split("config OK")[-1]  # known ones: no warning
    assert TELEGRAM.split(":")[1] not in output
