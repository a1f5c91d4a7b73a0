"""``offline_settings`` and ``run_command``: an App under test fails on a plugin that cannot load,
with that plugin's error, and commands typed into it pass the checks a platform's do."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import App, ChatContext, ChatType, settings_from_mapping
from bot.plugins import PluginError
from bot.testing import FakeLLM, offline_settings, reply, run_command

MEMBER = ChatContext("test", "team", ChatType.GROUP, "42", "Alice")
ADMIN = ChatContext("test", "team", ChatType.GROUP, "7", "Bob", is_admin=True)


async def test_a_plugin_that_cannot_be_imported_fails_the_start_with_its_error(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = offline_settings(fake_llm, tmp_path, plugins=["no_such_plugin_module"])
    with pytest.raises(PluginError) as raised:
        async with App(settings):
            pass
    assert str(raised.value) == (
        "plugin no_such_plugin_module cannot be imported:"
        " ModuleNotFoundError: No module named 'no_such_plugin_module'"
    )
    assert isinstance(raised.value.__cause__, ModuleNotFoundError)  # its traceback is shown too


async def test_where_a_running_bot_would_start_without_it(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """The contrast the kit exists for: plain settings log the failure and answer anyway."""
    fake_llm.script(reply("no tools here"))
    raw = {
        "llm": {"base_url": fake_llm.base_url},
        "storage": {"path": str(tmp_path / "bot.db")},
        "plugins": ["no_such_plugin_module"],
    }
    async with App(settings_from_mapping(raw)) as app:
        assert app.plugins is not None
        assert app.plugins.failed == {
            "no_such_plugin_module": "plugin no_such_plugin_module cannot be imported:"
            " ModuleNotFoundError: No module named 'no_such_plugin_module'"
        }
        assert (await app.service.chat(MEMBER, "hi")).text == "no tools here"


async def test_a_plugin_failing_in_setup_fails_the_start(fake_llm: FakeLLM, tmp_path: Path) -> None:
    plugins = [{"module": "tests.sample_plugins.broken", "settings": {}}]
    with pytest.raises(PluginError, match="failed in setup: RuntimeError: the weather API key"):
        async with App(offline_settings(fake_llm, tmp_path, plugins=plugins)):
            pass


async def test_settings_point_at_the_fake_and_merge_the_given_sections(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = offline_settings(
        fake_llm, tmp_path, config={"llm": {"model": "gpt-4.1-mini"}, "admins": ["test:7"]}
    )
    assert settings.llm.base_url == fake_llm.base_url and settings.llm.model == "gpt-4.1-mini"
    assert settings.storage.path == tmp_path / "bot.db"
    assert settings.is_bot_admin("test", "7")
    assert [entry.module for entry in settings.plugins] == [
        entry.module for entry in settings_from_mapping({}).plugins
    ]  # no plugins named: the default set, loaded as usual
    named = offline_settings(fake_llm, tmp_path, plugins=["plugins.clock", {"module": "dice"}])
    assert [(e.module, e.required) for e in named.plugins] == [
        ("plugins.clock", True),
        ("dice", True),
    ]
    with pytest.raises(ValueError, match="plugins="):
        offline_settings(fake_llm, tmp_path, config={"plugins": []})


async def test_run_command_passes_the_admin_check_and_the_arguments(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    plugins = ["tests.sample_plugins.moderation"]
    async with App(offline_settings(fake_llm, tmp_path, plugins=plugins)) as app:
        refused = await run_command(app, MEMBER, "/purge spam")
        assert (refused.text, refused.ok) == ("Only this chat's admins can use /purge.", False)
        assert (await run_command(app, ADMIN, "/purge  spam and\neggs ")).text == (
            "purged spam and\neggs"
        )
        assert (await run_command(app, ADMIN, "/purge@parlour_bot")).text == "purged nothing"
        assert (await run_command(app, MEMBER, "/rules")).text == "be kind"
        unknown = await run_command(app, MEMBER, "/nope")
        assert not unknown.ok and unknown.text == "Unknown command /nope. Try /help."
        for typo in ("purge", "/", "/ purge", ""):
            with pytest.raises(ValueError, match="starts with /name"):
                await run_command(app, ADMIN, typo)
