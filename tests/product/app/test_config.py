"""Config loading: interpolation, field-naming errors, secrets never printed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.config import (
    describe_errors,
    load_settings,
    masked_dump,
    secret_values,
    settings_from_mapping,
)
from bot.context import Scope
from bot.errors import ConfigError
from bot.testing.fake_llm import FakeLLM


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_read_the_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123456")
    settings = settings_from_mapping({})
    assert settings.llm.base_url == "http://127.0.0.1:11434/v1"
    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == "sk-from-env-123456"
    assert settings.chat.default_scope is Scope.CHAT


def test_interpolation_with_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_MODEL", "qwen2.5:7b")
    monkeypatch.delenv("MISSING_VAR", raising=False)
    path = write(
        tmp_path,
        "llm:\n  model: ${MY_MODEL}\n  base_url: ${MISSING_VAR:-http://127.0.0.1:8000/v1}\n",
    )
    settings = load_settings(path)
    assert settings.llm.model == "qwen2.5:7b"
    assert settings.llm.base_url == "http://127.0.0.1:8000/v1"


def test_interpolation_cannot_inject_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIL", "x\nstorage:\n  path: /etc/passwd")
    settings = load_settings(write(tmp_path, "chat:\n  system_prompt: ${EVIL}\n"))
    assert settings.chat.system_prompt.startswith("x\nstorage:")
    assert str(settings.storage.path) == "data/parlour.db"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llm:\n  context_window: lots\n", "llm.context_window"),
        ("llm:\n  max_output_tokens: 5000\n  context_window: 4096\n", "max_output_tokens"),
        ("chat:\n  default_scope: galaxy\n", "chat.default_scope"),
        ("llm:\n  base_url: ftp://example\n", "llm.base_url"),
        ("history:\n  max_turns: 0\n", "history.max_turns"),
        ("llm:\n  modle: gpt-4o\n", "llm.modle"),
        ("llm:\n  model: ${NOT_SET_ANYWHERE}\n", "NOT_SET_ANYWHERE"),
        ("- just\n- a list\n", "top level"),
        ("llm: [unclosed\n", "not valid YAML"),
    ],
)
def test_invalid_config_names_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace(".", r"\.")):
        load_settings(write(tmp_path, text))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.yaml")


def test_secrets_are_masked_and_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-abcdef123456")
    settings = settings_from_mapping(
        {
            "llm": {"fallbacks": [{"base_url": "http://127.0.0.1:1/v1", "api_key": "fb-key-999"}]},
            "telegram": {"enabled": False, "token": "123456:ABCdefGhIJKlmnOPQrstUVwxyz0123456789"},
        }
    )
    dumped = repr(masked_dump(settings))
    for secret in ("sk-secret-abcdef123456", "fb-key-999", "ABCdefGhIJKlmn"):
        assert secret not in dumped
        assert secret not in repr(settings)
    found = secret_values(settings)
    assert "sk-secret-abcdef123456" in found
    assert "fb-key-999" in found
    assert "123456:ABCdefGhIJKlmnOPQrstUVwxyz0123456789" in found


def test_bot_admins() -> None:
    settings = settings_from_mapping({"admins": ["telegram:42", 7]})
    assert settings.is_bot_admin("telegram", "42")
    assert not settings.is_bot_admin("discord", "42")


def test_embedding_endpoint_query_secrets_are_redacted() -> None:
    settings = settings_from_mapping(
        {
            "memory": {
                "embeddings": {"model": "m", "base_url": "https://e.example/v1?key=emb-SECRET-1"}
            }
        }
    )
    assert "emb-SECRET-1" in secret_values(settings)


class _Cat(BaseModel):
    kind: Literal["cat"]


class _Dog(BaseModel):
    kind: Literal["dog"]


class _Pet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pet: Annotated[_Cat | _Dog, Field(discriminator="kind")]


def test_errors_name_fields_and_never_echo_values() -> None:
    """pydantic quotes some inputs in its messages (a union's tag); validators may, too."""
    with pytest.raises(ValidationError) as caught:
        _Pet.model_validate({"pet": {"kind": "hunter2-not-a-tag"}, "pasword": "hunter2-typo"})
    lines = describe_errors(caught.value, ("pets",))
    assert "unknown key pets.pasword" in lines
    assert any(line.startswith("pets.pet: Input tag '***'") for line in lines), lines
    assert "hunter2" not in "\n".join(lines)


def test_a_value_that_is_also_a_key_name_is_not_masked(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """``mode: webhook`` beside a ``webhook:`` key: the message may say "webhook"; the token
    in the same section is still never echoed."""
    from adapters.telegram.settings import telegram_settings
    from tests.conftest import make_settings

    token = "123456:TEST-secret-never-shown"
    section = {"enabled": True, "token": token, "mode": "webhook"}
    with pytest.raises(ConfigError) as refused:
        telegram_settings(make_settings(fake_llm, tmp_path, telegram=section))
    assert "mode is webhook but webhook.url is not set" in str(refused.value)
    assert "TEST-secret" not in str(refused.value)


def test_a_mistyped_time_zone_is_quoted_so_the_typo_shows() -> None:
    """A zone's name is never a secret: its validator says so, and the error quotes it."""
    with pytest.raises(ConfigError) as refused:
        settings_from_mapping({"schedules": {"timezone": "Europe/Berlinn"}})
    said = "schedules.timezone: unknown time zone 'Europe/Berlinn' (did you mean Europe/Berlin?)"
    assert said in str(refused.value)


def test_a_time_zone_line_holding_something_else_is_still_masked() -> None:
    """A token pasted on the zone's line is not quoted: only a typo of a zone's name is."""
    for pasted in ("sk-live hunter2 SECRET", "ghp_hunter2abcdefghijklmnopqrstuvwxyz0123"):
        with pytest.raises(ConfigError) as refused:
            settings_from_mapping({"schedules": {"timezone": pasted}})
        assert "schedules.timezone: unknown time zone '***' (use an IANA name" in str(refused.value)
        assert "hunter2" not in str(refused.value)
