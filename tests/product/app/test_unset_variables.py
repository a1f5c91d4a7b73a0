"""A ``${VAR}`` that is not set stops only the commands that read its section (issue 27: with
``http.admin_tokens: ["${PARLOUR_ADMIN_TOKEN}"]`` and the variable unset, ``history list`` and
``check-config`` exited with "environment variable PARLOUR_ADMIN_TOKEN is not set").

Storage commands read ``storage:``; the console chat reads every section but the platforms';
``run`` reads those of the platforms it serves; ``check-config`` and ``doctor`` report every
unset variable and go on. A section whose variable is missing is never read as if the value were
absent: a command that needs it fails naming the variable.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from bot.testing.fake_llm import FakeLLM
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

ADMIN_TOKEN = 'http:\n  enabled: true\n  admin_tokens: ["${PARLOUR_ADMIN_TOKEN}"]\n'
UNSET = "http.admin_tokens[0]: environment variable PARLOUR_ADMIN_TOKEN is not set"


async def test_storage_commands_do_not_need_the_http_tokens(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path, ADMIN_TOKEN)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    assert "PARLOUR_ADMIN_TOKEN" not in env
    code, out, err = await run_cli("chat", env=env, stdin="hello there\n")  # serves no HTTP
    assert code == 0, err
    assert "echo: hello there" in out

    code, out, err = await run_cli("history", "list", env=env)
    assert code == 0, err
    [(key, turns)] = [line.split("\t") for line in out.splitlines()]
    assert key.startswith("console:local:u:") and turns == "1 turns"

    code, out, err = await run_cli("history", "export", key, env=env)
    assert code == 0, err
    assert [json.loads(line)["content"] for line in out.splitlines()] == [
        "hello there",
        "echo: hello there",
    ]

    code, out, err = await run_cli("usage", env=env)
    assert code == 0, err
    assert out.splitlines()[1].split()[1:3] == ["console:local", "root"]


async def test_check_config_reports_the_variable_and_still_prints_the_config(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, ADMIN_TOKEN)
    code, out, err = await run_cli("check-config", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 2  # a problem `run` would stop at
    assert err.splitlines() == [f"error: {UNSET}"]
    printed = yaml.safe_load(out)
    assert printed["storage"]["path"] == str(tmp_path / "bot.db")
    assert printed["http"] == {"enabled": True}  # what was left of it is not shown as checked


async def test_a_disabled_sections_variable_is_a_warning(tmp_path: Path) -> None:
    write_config(tmp_path, ADMIN_TOKEN.replace("enabled: true", "enabled: false"))
    code, out, err = await run_cli("check-config", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 0, err
    assert out.endswith("config OK\n")
    assert err.splitlines() == [f"warning: http is disabled, so `run` ignores this: {UNSET}"]


async def test_run_still_stops_at_the_variable_it_needs(tmp_path: Path) -> None:
    write_config(tmp_path, ADMIN_TOKEN)
    code, _out, err = await run_cli("run", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 2
    assert err.splitlines() == [f"error: {UNSET}"]


async def test_a_platform_switched_on_by_an_unset_variable_is_not_taken_for_off(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "telegram:\n  enabled: ${TELEGRAM_ON}\n")
    env = env_for(tmp_path, OPENAI_API_KEY=SECRET)
    code, _out, err = await run_cli("run", env=env)
    assert code == 2
    assert err.splitlines() == [
        "error: telegram.enabled: environment variable TELEGRAM_ON is not set"
    ]
    code, _out, err = await run_cli("check-config", env=env)
    assert code == 2
    assert err.splitlines() == [
        "error: telegram.enabled: environment variable TELEGRAM_ON is not set"
    ]


async def test_the_chat_needs_its_key_variable_and_the_reports_do_not(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path, "llm:\n  api_key: ${LLM_KEY}\n")
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url)
    code, _out, err = await run_cli("chat", env={**env, "LLM_KEY": SECRET}, stdin="hi\n")
    assert code == 0, err
    asked = len(fake_llm.requests)

    code, _out, err = await run_cli("chat", env=env, stdin="hi again\n")
    assert code == 2
    assert err.splitlines() == ["error: llm.api_key: environment variable LLM_KEY is not set"]
    assert len(fake_llm.requests) == asked

    code, out, err = await run_cli("history", "list", env=env)
    assert code == 0, err
    assert out.split("\t")[1] == "1 turns\n"


async def test_a_storage_variable_is_needed_by_the_reports_never_replaced_by_a_default(
    tmp_path: Path,
) -> None:
    """Left out, ``storage.url`` would fall back to ``data/parlour.db``: the wrong database."""
    (tmp_path / "config.yaml").write_text("storage:\n  url: ${DATABASE_URL}\n", encoding="utf-8")
    env = env_for(tmp_path, OPENAI_API_KEY=SECRET)
    for command in (["history", "list"], ["usage"]):
        code, _out, err = await run_cli(*command, env=env, cwd=tmp_path)
        assert code == 2
        assert err.splitlines() == [
            "error: storage.url: environment variable DATABASE_URL is not set"
        ]
    assert not (tmp_path / "data").exists()


async def test_doctor_reports_the_variable_and_checks_what_does_not_need_it(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path, ADMIN_TOKEN)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli("doctor", "--json", "--timeout", "30", env=env)
    assert code == 1, err
    rows = {r["name"]: r for r in map(json.loads, out.splitlines())}
    assert rows["config"]["status"] == "FAIL"
    assert rows["config"]["detail"] == UNSET
    assert rows["config"]["fix"].startswith("set PARLOUR_ADMIN_TOKEN in the environment")
    assert rows["http"]["status"] == "FAIL"
    assert rows["http"]["detail"] == "not checked: http: needs PARLOUR_ADMIN_TOKEN, not set"
    assert rows["database"]["status"] == "warn"  # not there yet: checked all the same
    assert rows["llm completion"]["status"] == "ok"
