"""Plugins and the tool loop, end to end: the fake LLM issues tool calls (plain and streamed),
the real registry runs them, and what goes back to the model is checked on the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.conversation.service import Done, ToolFinished, ToolStarted
from bot.errors import ConfigError
from bot.plugins import PluginError, ToolDefinitionError, ToolRegistry, tool
from bot.plugins.context import ToolContext
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private

TOOLBOX = {"module": "tests.sample_plugins.toolbox", "settings": {"greeting": "Ahoy"}}
BUILTINS = ["plugins.clock", "plugins.calculator"]


def tool_results(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def offered(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return sorted(t["function"]["name"] for t in body.get("tools", []))


async def test_tool_round_trip(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_calls(("calculate", {"expression": "2**10 * 3"})), reply("It is 3072."))
    async with make_app(plugins=BUILTINS) as app:
        answer = await app.service.chat(private(), "what is 2**10 * 3")
        stats = await app.store.stats(answer.conversation_key)
    assert answer.text == "It is 3072."
    assert tool_results(fake_llm) == ["2**10 * 3 = 3072"]
    assert offered(fake_llm, 0) == ["calculate", "current_time"]
    assert stats.turns_stored == 1


async def test_parallel_calls_and_streamed_events(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(
        tool_calls(
            ("current_time", {"timezone": "Asia/Tokyo"}), ("calculate", {"expression": "6*7"})
        ),
        reply("Done."),
    )
    async with make_app(plugins=BUILTINS) as app:
        events = [e async for e in app.service.stream(private(), "time in Tokyo and 6*7?")]
    started = [e.call.name for e in events if isinstance(e, ToolStarted)]
    finished = [e.call.name for e in events if isinstance(e, ToolFinished)]
    assert started == finished == ["current_time", "calculate"]
    assert isinstance(events[-1], Done)
    results = tool_results(fake_llm)
    assert "Asia/Tokyo" in results[0] and "UTC+09:00" in results[0]
    assert results[1] == "6*7 = 42"


async def test_bad_calls_reach_the_model_as_tool_errors(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.script(
        tool_calls(
            ("greet", '{"name": '),  # truncated JSON
            ("greet", {"who": "Bob"}),  # wrong argument
            ("teleport", {}),  # no such tool
            ("explode", {}),
            ("slow", {"seconds": 5}),
            ("refuse", {}),
        ),
        reply("Sorry about that."),
    )
    async with make_app(plugins=[TOOLBOX]) as app:
        answer = await app.service.chat(private(), "try things")
    assert answer.text == "Sorry about that."
    bad_json, bad_args, unknown, exploded, timed_out, refused = tool_results(fake_llm)
    assert bad_json.startswith("Error: the arguments are not valid JSON")
    assert "invalid arguments for greet" in bad_args and "name" in bad_args
    assert "no tool named 'teleport'" in unknown and "greet" in unknown
    assert timed_out == "Error: slow did not finish within 0.2 seconds."
    assert refused == "Error: refuse failed: The vault is closed on Sundays."  # meant for chat
    # an unexpected exception's text stays in the log: the model could repeat it in the chat
    assert exploded == "Error: explode failed (an internal error). Tell the user it did not work."
    assert "kaboom" not in str(fake_llm.chat_requests[-1].json)
    assert "kaboom at 0x00 in relation memories" in caplog.text


async def test_plugin_settings_store_and_commands(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_calls(("greet", {"name": "Mei"})), reply("ok"))
    async with make_app(plugins=[TOOLBOX]) as app:
        await app.service.chat(private(), "greet Mei")
        assert tool_results(fake_llm) == ["Ahoy, Mei!"]
        assert await app.store.kv_get("toolbox", "last") == "Mei"
        help_text = (await app.commands.handle(private(), "help")).text
        assert "/greeted - Who was greeted last" in help_text
        assert (await app.commands.handle(private(), "greeted")).text == "someone"


async def test_admin_only_tool_is_refused_for_non_admins(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("wipe_everything", {})), reply("I can't."))
    async with make_app(plugins=[TOOLBOX]) as app:
        await app.service.chat(group(), "wipe it all")
        assert "wipe_everything" not in offered(fake_llm)  # not even offered
        assert tool_results(fake_llm) == [
            "Error: wipe_everything is only available to admins of this chat. Tell the user so."
        ]
        fake_llm.script(tool_calls(("wipe_everything", {})), reply("Done."))
        await app.service.chat(group(is_admin=True), "wipe it all")
        assert tool_results(fake_llm)[-1] == "wiped"
        assert "wipe_everything" in offered(fake_llm, -2)


async def test_a_broken_plugin_does_not_stop_the_bot(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    broken = "tests.sample_plugins.broken"
    async with make_app(plugins=[broken, "plugins.calculator", "no.such.plugin"]) as app:
        assert set(app.tools.names()) == {"calculate"}  # half_done was taken back
        assert not app.commands.knows("halfdone")
        assert app.plugins is not None
        assert "weather API key is missing" in app.plugins.failed[broken]
        assert "cannot be imported" in app.plugins.failed["no.such.plugin"]
        await app.service.chat(private(), "still works")
    assert "plugin tests.sample_plugins.broken failed in setup" in caplog.text
    with pytest.raises(PluginError, match="weather API key"):
        async with make_app(plugins=[{"module": broken, "required": True}]):
            pass
    with pytest.raises(PluginError, match="settings: greeting"):
        async with make_app(
            plugins=[{"module": TOOLBOX["module"], "settings": {"greeting": 5}}],
            plugins_required=True,
        ):
            pass


async def test_tool_turns_stay_valid_after_trimming_and_restart(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    sections = {"plugins": BUILTINS, "history": {"max_tokens": 300}}
    async with make_app(**sections) as app:
        for n in range(6):
            fake_llm.script(
                tool_calls(("calculate", {"expression": f"{n}*{n}"})), reply(f"{n * n} " * 20)
            )
            await app.service.chat(private(), f"square of {n}? " + "pad " * 20)
    async with make_app(**sections) as app:
        answer = await app.service.chat(private(), "and now?")
    assert answer.text.startswith("echo")  # the validating fake accepted the trimmed history
    messages = fake_llm.chat_requests[-1].json["messages"]
    ids = {c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert all(m["tool_call_id"] in ids for m in messages if m["role"] == "tool")


def test_tool_declarations_fail_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match="no type annotation"):

        @tool
        async def untyped(ctx: ToolContext, x) -> str:  # type: ignore[no-untyped-def]
            """Has an untyped parameter."""
            return ""

    with pytest.raises(ToolDefinitionError, match="docstring"):

        @tool
        async def undocumented(ctx: ToolContext) -> str:
            return ""

    with pytest.raises(ToolDefinitionError, match="a name may only use"):

        @tool(name="no spaces allowed")
        async def spaced(ctx: ToolContext) -> str:
            """Bad name."""
            return ""

    @tool
    async def fine(ctx: ToolContext, n: int = 1) -> str:
        """Fine."""
        return ""

    registry = ToolRegistry(lambda ctx: False)
    spec = fine.__parlour_tool__  # type: ignore[attr-defined]
    registry.add(spec, lambda s, c: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.add(spec, lambda s, c: None)  # type: ignore[arg-type, return-value]
    schema = spec.definition()["function"]["parameters"]
    assert schema["properties"]["n"] == {"default": 1, "type": "integer"}
    assert json.dumps(schema)


async def test_plugins_key_is_validated(make_app: AppFactory) -> None:
    with pytest.raises(ConfigError, match="plugins"):
        async with make_app(plugins=[{"settings": {}}]):
            pass


async def test_plugins_on_telegram_menus_and_reminders(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: Any
) -> None:
    from tests.telegram_harness import running_bot

    tg = fake_telegram
    alice = tg.user(7, "Alice")
    forum = tg.group(-300, "Forum", supergroup=True, forum=True)
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})), reply("Sure!")
    )
    plugins = [TOOLBOX, "plugins.reminders"]
    async with running_bot(make_app, tg, plugins=plugins, telegram={"stream": False}):
        tg.send(forum, alice, "@parlour_bot remind me to stretch", thread_id=12)
        await tg.wait_for_message(forum["id"], count=2, timeout=8)
        await tg.wait_idle()
    answer, reminder = tg.messages(forum["id"])
    assert answer["text"] == "Sure!"
    assert reminder["text"] == "⏰ Alice, you asked me to remind you: stretch"
    assert reminder.get("message_thread_id") == 12
    menus = [c for c in tg.calls if c.method == "setMyCommands"]
    assert all("greeted" in {cmd["command"] for cmd in c.params["commands"]} for c in menus)


async def test_retention_deletes_old_turns(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(history={"retention_days": 1}) as app:
        await app.service.chat(private(), "old message")
        await app.store.delete_older_than(-1)  # everything is "older" than one second ahead
        assert (await app.store.stats("telegram:1:u:1")).turns_stored == 0
        assert app.scheduler is not None
        jobs = {j.job_id for j in app.scheduler.pending()}
        assert jobs == {"parlour:retention", "parlour:housekeeping"}
    async with make_app() as app:  # retention off: the job is gone
        assert app.scheduler is not None
        assert [j.job_id for j in app.scheduler.pending()] == ["parlour:housekeeping"]


async def test_plugins_from_installed_packages_by_entry_point_name(
    make_app: AppFactory, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import EntryPoint

    import bot.plugins.loader as loader

    point = EntryPoint("calc", "plugins.calculator", loader.ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        loader, "entry_points", lambda group: [point] if group == point.group else []
    )
    async with make_app(plugins=["calc"]) as app:
        assert app.tools.names() == ["calculate"]


@pytest.mark.parametrize("rounds", [0, 2])
async def test_tools_max_rounds_caps_the_tool_rounds(
    make_app: AppFactory, fake_llm: FakeLLM, rounds: int
) -> None:
    """``tools.max_rounds``: that many rounds of calls run; then the tools are still described
    but the request says ``tool_choice: none``, and the model answers in text."""
    call = tool_calls(("calculate", {"expression": "1+1"}))
    fake_llm.script(*[call] * rounds, reply("Two."))
    async with make_app(plugins=BUILTINS, tools={"max_rounds": rounds}) as app:
        answer = await app.service.chat(private(), "1+1, again and again")
    assert answer.text == "Two."
    choices = [r.json.get("tool_choice") for r in fake_llm.chat_requests]
    assert choices == [None] * rounds + ["none"]
    assert len(tool_results(fake_llm)) == rounds
    assert offered(fake_llm) == ["calculate", "current_time"]  # still described
