"""A chat's persona (/persona), the config's ``chats:`` presets, and who may /reset.

Everything is checked where it matters: the system prompt, model and tools that reach the fake
LLM, and what the store keeps across a restart.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import settings_from_mapping
from bot.context import ChatContext, ChatType
from bot.conversation.presets import ChatPresets, PersonaSource
from bot.errors import ConfigError
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private

DEFAULT = "You are Parlour"  # the start of chat.system_prompt's default
PIRATE = "You are a pirate. Answer in pirate speak."


def system_of(fake: FakeLLM, index: int = -1) -> str:
    body: dict[str, Any] = fake.chat_requests[index].json
    return str(body["messages"][0]["content"])


def users_of(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def offered(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def tool_results(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


ADMIN = group(user="7", name="Alice", is_admin=True)
MEMBER = group(user="8", name="Bob")
OTHER_GROUP = group(user="7", name="Alice", chat="-200")


async def test_an_admins_persona_reaches_only_that_chat_and_survives_a_restart(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        done = await app.commands.handle(ADMIN, "persona", PIRATE)
        assert done.ok and "Persona set" in done.text
        await app.service.chat(MEMBER, "hello")
        assert system_of(fake_llm) == PIRATE
        await app.service.chat(OTHER_GROUP, "hello")
        assert system_of(fake_llm).startswith(DEFAULT)
        await app.service.chat(private("7", "Alice"), "hello")
        assert system_of(fake_llm).startswith(DEFAULT)
    async with make_app() as app:  # a new process on the same database
        shown = await app.commands.handle(ADMIN, "persona")
        assert "own persona" in shown.text and PIRATE in shown.text
        await app.service.chat(MEMBER, "still there?")
        assert system_of(fake_llm) == PIRATE


async def test_a_members_persona_is_refused_and_changes_nothing(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        await app.commands.handle(ADMIN, "persona", PIRATE)
        refused = await app.commands.handle(MEMBER, "persona", "You obey Bob only.")
        assert not refused.ok
        assert "Only this chat's admins" in refused.text
        also = await app.commands.handle(MEMBER, "persona", "reset")
        assert not also.ok
        hidden = await app.commands.handle(MEMBER, "persona")
        assert not hidden.ok and PIRATE not in hidden.text
        await app.service.chat(MEMBER, "who are you?")
        assert system_of(fake_llm) == PIRATE


async def test_persona_reset_returns_to_the_default(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        nothing = await app.commands.handle(ADMIN, "persona", "reset")
        assert "no persona of its own" in nothing.text
        await app.commands.handle(ADMIN, "persona", PIRATE)
        done = await app.commands.handle(ADMIN, "persona", "reset")
        assert done.ok and "default persona" in done.text
        shown = await app.commands.handle(ADMIN, "persona")
        assert shown.text.startswith("This chat uses the default persona")
        await app.service.chat(MEMBER, "hi")
        assert system_of(fake_llm).startswith(DEFAULT)
    async with make_app() as app:
        await app.service.chat(MEMBER, "hi again")
        assert system_of(fake_llm).startswith(DEFAULT)


async def test_the_owner_of_a_private_chat_sets_their_own(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    mei, ravi = private("5", "Mei"), private("6", "Ravi")
    async with make_app() as app:
        done = await app.commands.handle(mei, "persona", "Call me captain.")
        assert done.ok
        await app.service.chat(mei, "hi")
        assert system_of(fake_llm) == "Call me captain."
        await app.service.chat(ravi, "hi")
        assert system_of(fake_llm).startswith(DEFAULT)


async def test_a_persona_over_the_cap_is_refused_with_the_numbers(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(chat={"max_persona_chars": 40}) as app:
        refused = await app.commands.handle(ADMIN, "persona", "x" * 41)
        assert not refused.ok
        assert "41 characters" in refused.text and "limit is 40" in refused.text
        assert (await app.commands.handle(ADMIN, "persona", "y" * 40)).ok
        await app.service.chat(ADMIN, "hi")
        assert system_of(fake_llm) == "y" * 40


async def test_persona_follows_a_group_that_becomes_a_supergroup(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        await app.commands.handle(group(chat="-5", is_admin=True), "persona", PIRATE)
        await app.service.migrate_chat("telegram:-5", "telegram:-1005")
        await app.service.chat(group(chat="-1005"), "ahoy?")
        assert system_of(fake_llm) == PIRATE
    async with make_app() as app:
        await app.service.chat(group(chat="-1005"), "ahoy again?")
        assert system_of(fake_llm) == PIRATE


# -- chats: presets ----------------------------------------------------------------------------

PRESETS: dict[str, Any] = {
    "plugins": ["plugins.clock", "plugins.calculator", "tests.sample_plugins.moderation"],
    "chats": [
        {
            "match": ["telegram:-300", "telegram:-301"],
            "system_prompt": "You are the maths club's tutor.",
            "model": "tutor-model",
            "scope": "user",
            "plugins": ["plugins.calculator"],
        },
        {"match": "telegram:-30*", "system_prompt": "never reached for -300: first match wins"},
        {"match": "*:private", "model": "private-model"},
    ],
}
CLUB = group(user="7", name="Alice", chat="-300", is_admin=True)


async def test_a_preset_sets_prompt_model_scope_and_tools(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**PRESETS) as app:
        await app.service.chat(CLUB, "what is 2+2?")
        request = fake_llm.chat_requests[-1].json
        assert system_of(fake_llm) == "You are the maths club's tutor."
        assert request["model"] == "tutor-model"
        assert offered(fake_llm) == ["calculate"]
        assert app.service.conversation_key(CLUB) == "telegram:-300:u:7"

        await app.service.chat(group(chat="-309"), "hi")  # the second entry
        assert system_of(fake_llm) == "never reached for -300: first match wins"
        assert fake_llm.chat_requests[-1].json["model"] == "gpt-4o-mini"
        assert offered(fake_llm) == ["calculate", "current_time"]

        await app.service.chat(private("5", "Mei"), "hi")
        assert fake_llm.chat_requests[-1].json["model"] == "private-model"
        assert system_of(fake_llm).startswith(DEFAULT)

        await app.service.chat(group(chat="-999"), "hi")  # no preset
        assert fake_llm.chat_requests[-1].json["model"] == "gpt-4o-mini"
        assert app.service.conversation_key(group(chat="-999")) == "telegram:-999"


async def test_a_tool_the_preset_leaves_out_is_refused_if_called_anyway(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("current_time", {"timezone": "UTC"})), reply("I can't."))
    async with make_app(**PRESETS) as app:
        answer = await app.service.chat(CLUB, "what time is it?")
    assert answer.text == "I can't."
    [result] = tool_results(fake_llm)
    assert "current_time is not enabled in this chat" in result


async def test_a_plugin_command_the_preset_leaves_out_is_not_offered(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**PRESETS) as app:
        refused = await app.commands.handle(CLUB, "rules")
        assert not refused.ok and "not enabled in this chat" in refused.text
        assert "/rules" not in (await app.commands.handle(CLUB, "help")).text
        elsewhere = await app.commands.handle(group(chat="-999"), "rules")
        assert elsewhere.ok and elsewhere.text == "be kind"


async def test_persona_and_scope_set_in_the_chat_override_the_preset(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**PRESETS) as app:
        shown = await app.commands.handle(CLUB, "persona")
        assert shown.text.startswith("This chat uses the persona configured for it")
        await app.commands.handle(CLUB, "persona", PIRATE)
        await app.commands.handle(CLUB, "scope", "chat")
        await app.service.chat(CLUB, "hi")
        assert system_of(fake_llm) == PIRATE
        assert fake_llm.chat_requests[-1].json["model"] == "tutor-model"  # no in-chat override
        assert app.service.conversation_key(CLUB) == "telegram:-300"
        done = await app.commands.handle(CLUB, "persona", "reset")
        assert "configured for it" in done.text
        await app.service.chat(CLUB, "hi")
        assert system_of(fake_llm) == "You are the maths club's tutor."


@pytest.mark.parametrize(
    ("chats", "expected"),
    [
        (
            [{"match": "telegram:1", "plugins": ["plugins.clock", "plugins.weather"]}],
            "chats.0.plugins.1 is not a module in plugins:",
        ),
        ([{"match": "telegram:1", "model": "  "}], "chats.0.model"),
        ([{"match": []}], "chats.0.match"),
        ([{"match": "telegram:1", "scope": "galaxy"}], "chats.0.scope"),
        ([{"system_prompt": "no match"}], "chats.0.match"),
    ],
)
def test_bad_presets_are_config_errors(chats: list[dict[str, Any]], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        settings_from_mapping({"plugins": ["plugins.clock"], "chats": chats})


def test_a_presets_unknown_base_is_named_by_its_place_whatever_the_config_holds() -> None:
    """The config's own values are masked out of messages as whole words only: a scope named
    ``chat`` elsewhere in the file must not turn ``chats.0`` into ``***s.0``."""
    config = {
        "chat": {"default_scope": "chat"},
        "knowledge": {"bases": {"rules": {}}},
        "chats": [{"match": "*:private", "knowledge": ["nosuchbase"]}],
    }
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping(config)
    assert "chats.0.knowledge.0 is not a base in knowledge.bases" in str(caught.value)
    assert "***" not in str(caught.value)


# -- /reset --------------------------------------------------------------------------------------


async def test_a_members_reset_of_a_shared_conversation_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        await app.service.chat(ADMIN, "the plan is blue")
        refused = await app.commands.handle(MEMBER, "reset")
        assert not refused.ok
        assert "Only this chat's admins can reset the shared conversation" in refused.text
        await app.service.chat(MEMBER, "what was the plan?")
        assert users_of(fake_llm) == ["[Alice] the plan is blue", "[Bob] what was the plan?"]
        assert "/reset" not in (await app.commands.handle(MEMBER, "help")).text
        assert "/reset" in (await app.commands.handle(ADMIN, "help")).text
        assert (await app.commands.handle(ADMIN, "reset")).ok
        await app.service.chat(MEMBER, "and now?")
        assert users_of(fake_llm) == ["[Bob] and now?"]


async def test_reset_anyone_lets_every_member_reset(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(chat={"reset": "anyone"}) as app:
        await app.service.chat(ADMIN, "the plan is blue")
        assert "/reset" in (await app.commands.handle(MEMBER, "help")).text
        assert (await app.commands.handle(MEMBER, "reset")).ok
        await app.service.chat(MEMBER, "what was the plan?")
        assert users_of(fake_llm) == ["[Bob] what was the plan?"]


async def test_in_user_scope_each_member_resets_only_their_own(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(chat={"default_scope": "user"}) as app:
        await app.service.chat(ADMIN, "alice's secret")
        await app.service.chat(MEMBER, "bob's secret")
        assert "/reset" in (await app.commands.handle(MEMBER, "help")).text
        assert (await app.commands.handle(MEMBER, "reset")).ok
        await app.service.chat(MEMBER, "bob again")
        assert users_of(fake_llm) == ["bob again"]
        await app.service.chat(ADMIN, "alice again")
        assert users_of(fake_llm) == ["alice's secret", "alice again"]
        assert (await app.commands.handle(private("8", "Bob"), "reset")).ok  # private: own


# -- which preset a chat gets (pure: the subjects of access.allow) -------------------------------

TABLE: dict[str, Any] = {
    "chats": [
        {"match": "discord:guild:42", "system_prompt": "server"},
        {"match": "discord:456", "system_prompt": "channel and its threads"},
        {"match": ["telegram:user:7"], "system_prompt": "one person"},
        {"match": "*:private", "system_prompt": "private anywhere"},
        {"match": "telegram:group", "system_prompt": "every telegram group"},
    ]
}


@pytest.mark.parametrize(
    ("ctx", "expected"),
    [
        (ChatContext("discord", "1", ChatType.GROUP, "8", extra=(("guild", "42"),)), "server"),
        (
            ChatContext("discord", "9", ChatType.GROUP, "8", extra=(("parent", "456"),)),
            "channel and its threads",
        ),
        (ChatContext("discord", "3", ChatType.PRIVATE, "8"), "private anywhere"),
        (group(user="7"), "one person"),  # the earlier entry wins over "every telegram group"
        (group(user="8"), "every telegram group"),
        (ChatContext("discord", "5", ChatType.GROUP, "8"), None),
    ],
)
def test_the_first_matching_preset_applies(ctx: ChatContext, expected: str | None) -> None:
    settings = settings_from_mapping({"plugins": [], **TABLE})
    preset = ChatPresets(settings).match(ctx)
    assert (preset.system_prompt if preset else None) == expected
    persona = ChatPresets(settings).persona(ctx, None)
    assert persona.source is (PersonaSource.PRESET if expected else PersonaSource.DEFAULT)
