"""The command line as a user runs it, the fake LLM on 127.0.0.1: ``main(argv)`` in-process, and
a real process where the test is about processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.testing.fake_llm import FakeLLM, error
from tests.cli_harness import run_main, run_process
from tests.secret_scan import find_secrets

SECRET = "sk-cli-secret-9f8e7d6c5b4a3210"


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    env["PARLOUR_CONFIG"] = str(tmp_path / "config.yaml")
    env.update(extra)
    return env


def write_config(tmp_path: Path, text: str = "") -> None:
    base = f"storage:\n  path: {tmp_path / 'bot.db'}\n"
    (tmp_path / "config.yaml").write_text(base + text, encoding="utf-8")


async def run_cli(
    *args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> tuple[int, str, str]:
    """``python -m bot ARGS`` as ``main(ARGS)`` in this process (:mod:`tests.cli_harness`)."""
    return no_secrets(args, await run_main(*args, env=env, stdin=stdin, cwd=cwd))


async def run_cli_process(
    *args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None, program: str = ""
) -> tuple[int, str, str]:
    """A real ``python -m bot ARGS`` process: for what only a process shows."""
    return no_secrets(
        args, await run_process(*args, env=env, stdin=stdin, cwd=cwd, program=program)
    )


def no_secrets(args: tuple[str, ...], result: tuple[int, str, str]) -> tuple[int, str, str]:
    """Whatever a command prints or logs, the key and any token stay masked."""
    leaks = find_secrets(result[1] + result[2], [SECRET])
    assert not leaks, f"secrets in the output of {args}: {leaks}"
    return result


async def test_without_a_key_says_what_to_set(tmp_path: Path) -> None:
    write_config(tmp_path)
    code, _out, err = await run_cli(env=env_for(tmp_path), stdin="hi\n")
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "OPENAI_API_KEY" in lines[0]
    assert "OPENAI_BASE_URL" in lines[0]


async def test_piped_chat_remembers_across_processes(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli_process(env=env, stdin="hello there\n/history\n")
    assert code == 0, err
    assert "echo: hello there" in out
    assert "Turns stored: 1" in out

    code, out, err = await run_cli_process("chat", env=env, stdin="second process\n")
    assert code == 0, err
    messages = fake_llm.requests[-1].json["messages"]
    assert [m["content"] for m in messages[1:]] == [
        "hello there",
        "echo: hello there",
        "second process",
    ]
    assert SECRET not in out + err


async def test_a_local_server_needs_no_key(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url)
    code, out, err = await run_cli(env=env, stdin="hi from ollama land\n")
    assert code == 0, err
    assert "echo: hi from ollama land" in out


async def test_console_reports_llm_failure_and_carries_on(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path, "llm:\n  retry:\n    max_attempts: 1\n")
    fake_llm.api_key = "sk-the-real-key-0000000000"
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli("chat", env=env, stdin="one\ntwo\n")
    assert code == 0
    assert out.count("LLM authentication failed (admins: check the API key).") == 2
    assert SECRET not in out + err


async def test_check_config_masks_secrets(tmp_path: Path) -> None:
    write_config(tmp_path, "telegram:\n  enabled: false\n  token: ${TG_TOKEN}\n")
    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    env = env_for(tmp_path, OPENAI_API_KEY=SECRET, TG_TOKEN=token)
    code, out, err = await run_cli("check-config", env=env)
    assert code == 0, err
    assert "config OK" in out
    assert SECRET not in out + err
    assert token not in out + err
    assert "gpt-4o-mini" in out


async def test_invalid_config_names_the_field(tmp_path: Path) -> None:
    write_config(tmp_path, "llm:\n  context_window: huge\n")
    code, _out, err = await run_cli("check-config", env=env_for(tmp_path))
    assert code == 2
    assert "llm.context_window" in err
    assert "Traceback" not in err


async def test_run_without_platforms_is_a_clear_error(tmp_path: Path) -> None:
    write_config(tmp_path)
    code, _out, err = await run_cli("run", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 2
    assert "no platform is enabled" in err


async def test_history_export_writes_jsonl(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path, "llm:\n  circuit_breaker: 0\n")  # the next line tries again at once
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    fake_llm.script(error(500), error(500), error(500), error(500))
    await run_cli("chat", env=env, stdin="unanswered one\nanswered one\n")
    code, out, err = await run_cli("history", "list", env=env)
    assert code == 0, err
    key = out.split("\t")[0]
    assert key.startswith("console:local:u:")
    target = tmp_path / "export.jsonl"
    code, _, err = await run_cli("history", "export", key, "-o", str(target), env=env)
    assert code == 0, err
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(r["role"], r["content"], r["status"]) for r in records] == [
        ("user", "unanswered one", "unanswered"),
        ("user", "answered one", "answered"),
        ("assistant", "echo: answered one", "answered"),
    ]
    assert SECRET not in target.read_text()
    code, _, err = await run_cli("history", "export", "nope:1", env=env)
    assert code == 1
    assert "history list" in err


@pytest.mark.parametrize("argv", [["--help"], ["history", "--help"]])
async def test_help(argv: list[str], tmp_path: Path) -> None:
    code, out, _ = await run_cli(*argv, env=env_for(tmp_path))
    assert code == 0
    assert "usage:" in out


async def test_check_config_refuses_an_http_admin_no_one_can_verify(tmp_path: Path) -> None:
    write_config(tmp_path, 'admins: ["telegram:42", "http:rtadmin"]\n')
    code, _out, err = await run_cli("check-config", env=env_for(tmp_path))
    assert code == 2
    assert "admins:" in err and "cannot be verified" in err
    assert "http.bot_admin_tokens" in err
    assert "Traceback" not in err
