"""A further bot of the deployment (``telegram.helper``) is covered by what is written for its
platform: access lists, bot admins and presets (:func:`bot.context.platform_family`)."""

from __future__ import annotations

from pathlib import Path

from bot.context import ChatContext, ChatType, platform_family
from bot.conversation.presets import ChatPresets
from bot.guardrails.access import AccessPolicy, subjects
from bot.testing.fake_llm import FakeLLM
from tests.conftest import make_settings


def helper_ctx(user: str = "42") -> ChatContext:
    return ChatContext("telegram.helper", "-100", ChatType.GROUP, user, "Alice")


def test_family_of_a_platform() -> None:
    assert platform_family("telegram.helper") == "telegram"
    assert platform_family("telegram") == "telegram"
    assert platform_family("my-platform") == "my-platform"


def test_subjects_hold_the_bots_own_then_its_platforms() -> None:
    assert subjects(helper_ctx()) == (
        "telegram.helper:-100",
        "telegram.helper:user:42",
        "telegram.helper:group",
        "telegram:-100",
        "telegram:user:42",
        "telegram:group",
    )


def test_a_deny_for_the_platform_refuses_on_every_bot(fake_llm: FakeLLM, tmp_path: Path) -> None:
    settings = make_settings(
        fake_llm, tmp_path, access={"deny": ["telegram:user:42"]}, admins=["telegram:7"]
    )
    policy = AccessPolicy(settings)
    assert not policy.allows(helper_ctx("42"))
    assert policy.allows(helper_ctx("43"))
    assert policy.exempt(helper_ctx("7"))  # a bot admin of Telegram is one on every bot


def test_a_preset_for_one_bot_comes_before_the_platforms(fake_llm: FakeLLM, tmp_path: Path) -> None:
    chats = [
        {"match": "telegram.helper:*", "system_prompt": "Helper."},
        {"match": "telegram:-100", "system_prompt": "House bot."},
    ]
    presets = ChatPresets(make_settings(fake_llm, tmp_path, chats=chats))
    main = ChatContext("telegram", "-100", ChatType.GROUP, "1", "Alice")
    assert presets.persona(helper_ctx(), None).text == "Helper."
    assert presets.persona(main, None).text == "House bot."
