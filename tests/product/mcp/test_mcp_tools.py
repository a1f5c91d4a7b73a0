"""MCP tools end to end: the SDK's own server (tests/mcp_demo_server.py) over stdio and
streamable HTTP, the real registry and tool loop, the fake LLM on the wire, the console."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.console import ConsoleAdapter
from bot.app import App
from bot.mcp.connection import ServerConnection
from bot.mcp.status import ServerState, ServerStatus
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group
from tests.mcp_harness import http_demo, recording_proxy, stdio_server

READY = 30.0  # seconds a test waits for a server to start (a loaded CI machine is slow)


def offered(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def tool_results(fake: FakeLLM, index: int = -1) -> list[str]:
    """The tool messages of the request's current turn (after its last user message)."""
    messages: list[dict[str, Any]] = fake.chat_requests[index].json["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return [str(m["content"]) for m in messages[last_user:] if m["role"] == "tool"]


async def ready(app: App) -> None:
    assert app.mcp is not None
    assert await app.mcp.wait_ready(READY), [s.line() for s in app.mcp.statuses()]


async def test_stdio_tools_are_offered_and_called_through_the_console(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("echo", {"text": "hi"}), ("forecast", {"city": "Oslo"}), ("manual", {})),
        reply("Oslo is clear; the manual is linked."),
    )
    out = io.StringIO()
    async with make_app(
        plugins=["plugins.calculator"], mcp={"servers": {"demo": stdio_server()}}
    ) as app:
        await ready(app)
        console = ConsoleAdapter(app.platform, stdin=io.StringIO(), stdout=out)
        await console.handle("weather in Oslo and where is the manual?")
    assert "Oslo is clear" in out.getvalue()
    tools = offered(fake_llm, 0)
    assert {"calculate", "echo", "forecast", "chart", "manual", "wipe"} <= set(tools)
    echo = next(
        t for t in fake_llm.chat_requests[0].json["tools"] if t["function"]["name"] == "echo"
    )
    assert echo["function"]["description"] == "Repeat the text back."
    assert echo["function"]["parameters"]["required"] == ["text"]
    assert tool_results(fake_llm) == [
        "echo: hi",
        '{"city":"Oslo","temp_c":21.5,"sky":"clear"}',
        "[The Parlour manual](https://example.org/manual) (text/html)",
    ]


async def test_http_server_gets_its_headers_from_the_environment_and_never_logs_them(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "demo-token-5f1e9c2a77"
    monkeypatch.setenv("DEMO_MCP_TOKEN", secret)
    caplog.set_level(logging.DEBUG)
    fake_llm.script(tool_calls(("whoami", {})), reply("You are authorised."))
    async with http_demo(token=secret) as url:
        server = {"url": url, "headers": {"Authorization": "Bearer ${DEMO_MCP_TOKEN}"}}
        async with make_app(plugins=[], mcp={"servers": {"tickets": server}}) as app:
            await ready(app)
            answer = await app.service.chat(group(is_admin=True), "who am I to the ticket server?")
            statuses = app.mcp.statuses() if app.mcp else []
    assert answer.text == "You are authorised."
    assert tool_results(fake_llm) == ["authorised"]
    assert [s.transport for s in statuses] == ["http"]
    assert secret not in caplog.text


async def test_stopping_the_bot_ends_its_session_with_an_older_http_server(
    make_app: AppFactory, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server on the older protocol keeps a session per client, which the SDK deletes when
    its transport closes normally: stopping the bot lets it (a cut close would leave the
    session for the server to expire). The newer protocol keeps none."""
    monkeypatch.setattr(ServerConnection, "MODE", "legacy")
    async with http_demo() as target, recording_proxy(target) as (url, methods):
        async with make_app(plugins=[], mcp={"servers": {"web": {"url": url}}}) as app:
            await ready(app)
            assert "DELETE" not in methods
        for _ in range(100):
            if "DELETE" in methods:
                break
            await _tick()
    assert methods[0] == "POST" and methods[-1] == "DELETE", methods


async def test_an_erroring_and_a_hanging_tool_come_back_as_tool_errors_in_time(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("fail", {"reason": "no such ticket"}), ("hang", {}), ("echo", {"n": 1})),
        reply("Both failed; I told you why."),
    )
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server(timeout=1)}}) as app:
        await ready(app)
        began = time.monotonic()
        answer = await app.service.chat(group(), "try the tools")
        took = time.monotonic() - began
    assert answer.text == "Both failed; I told you why."
    fail, hang, echo = tool_results(fake_llm)
    assert fail == "Error: fail failed: refused: no such ticket"
    assert hang == "Error: hang did not finish within 1 seconds."
    assert echo.startswith("Error: invalid arguments for echo: ")
    assert "'text' is a required property" in echo
    assert took < 20  # bounded by the 1 s timeout, not by the hour the tool sleeps


async def test_an_admin_only_tool_is_neither_offered_nor_run_for_a_member(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("wipe", {})),
        reply("I can't do that here."),
        tool_calls(("wipe", {})),
        reply("Wiped."),
    )
    server = stdio_server(admin_only=["wipe"])
    async with make_app(plugins=[], mcp={"servers": {"demo": server}}) as app:
        await ready(app)
        assert app.tools.has_admin_tools  # adapters look up the sender's rights for turns
        await app.service.chat(group(user="7", name="Member"), "wipe it all")
        member_offer, member_results = offered(fake_llm, 0), tool_results(fake_llm)
        await app.service.chat(group(user="8", name="Admin", is_admin=True), "wipe it all")
    assert "wipe" not in member_offer and "echo" in member_offer
    assert member_results == [
        "Error: wipe is only available to admins of this chat. Tell the user so."
    ]
    assert "wipe" in offered(fake_llm, 2)
    assert tool_results(fake_llm)[-1] == "wiped"


async def test_servers_stop_with_the_bot_and_output_is_capped(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("pid", {}), ("long", {"size": 5000})), reply("ok"))
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server(max_output=300)}}) as app:
        await ready(app)
        await app.service.chat(group(), "pid and a long text")
    pid, long = tool_results(fake_llm)
    assert long == "x" * 300 + "… [cut: 4700 more characters]"
    for _ in range(100):  # the SDK ends the child when the bot closes: gone within seconds
        if not _alive(int(pid)):
            break
        await _tick()
    assert not _alive(int(pid))


async def test_a_server_that_never_answers_is_stopped_with_the_bot_not_waited_for(
    make_app: AppFactory, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """A hung stdio server (never answers, ignores its closed stdin) is killed when the bot
    stops, also one started again after a timed-out attempt: stopping used to wait for such
    a child to end on its own (120 s here)."""
    pids = tmp_path / "pids"
    hung = "import os, sys, time; print(os.getpid(), file=open(sys.argv[1], 'a'), flush=True)"
    command = [sys.executable, "-c", hung + "; time.sleep(120)", str(pids)]
    servers = {"hung": {"command": command, "connect_timeout": 2}}  # time to write its pid
    async with asyncio.timeout(60):  # far below the child's own 120 s
        async with make_app(plugins=[], mcp={"servers": servers}) as app:
            while not pids.exists() or len(pids.read_text().split()) < 2:
                await _tick()  # the first attempt timed out; the second is connecting
            assert app.mcp is not None and app.mcp.statuses()[0].restarts >= 1
    started = [int(pid) for pid in pids.read_text().split()]
    for _ in range(100):
        if not any(_alive(pid) for pid in started):
            break
        await _tick()
    assert not [pid for pid in started if _alive(pid)]


async def test_a_crashed_server_is_restarted_and_its_tools_return(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("crash", {})),
        reply("It crashed."),
        tool_calls(("echo", {"text": "back"})),
        reply("It is back."),
    )
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server()}}) as app:
        await ready(app)
        assert app.mcp is not None
        await app.service.chat(group(), "crash it")
        crashed = tool_results(fake_llm)
        await ready(app)  # restarted after the backoff
        status = app.mcp.statuses()[0]
        answer = await app.service.chat(group(), "is it back?")
    assert crashed == [
        "Error: crash failed: the MCP server demo stopped during the call (it is restarting)"
    ]
    assert status.state is ServerState.READY and status.restarts == 1
    assert "echo" in offered(fake_llm, 2)
    assert tool_results(fake_llm) == ["echo: back"]
    assert answer.text == "It is back."


@pytest.mark.parametrize(
    "never",
    [
        pytest.param({"command": ["/nonexistent/mcp-server"]}, id="missing-command"),
        pytest.param(
            {
                "command": [sys.executable, "-c", "import time; time.sleep(120)"],
                "connect_timeout": 2,
            },
            id="silent",
        ),
        pytest.param({"url": "http://127.0.0.1:9/mcp"}, id="refused-url"),
    ],
)
async def test_a_server_that_never_starts_blocks_neither_the_bot_nor_the_others(
    make_app: AppFactory, fake_llm: FakeLLM, never: dict[str, Any]
) -> None:
    fake_llm.script(tool_calls(("echo", {"text": "still here"})), reply("Fine."))
    began = time.monotonic()
    servers = {"broken": never, "demo": stdio_server()}
    async with make_app(plugins=[], mcp={"servers": servers}) as app:
        started = time.monotonic() - began
        assert app.mcp is not None
        states = {s.name: s.state for s in app.mcp.statuses()}
        assert states["broken"] is ServerState.STARTING or states["broken"] is ServerState.RETRYING
        ready_all = await app.mcp.wait_ready(5)
        demo_up = await app.mcp.wait_ready(0) or app.mcp.statuses()[1].state is ServerState.READY
        answer = await app.service.chat(group(), "echo")
        lines = [s.line() for s in app.mcp.statuses()]
    assert started < 10  # the bot was up before the broken server gave up
    assert not ready_all and demo_up
    assert answer.text == "Fine."
    assert tool_results(fake_llm) == ["echo: still here"]
    assert lines[0].startswith("broken: ")


async def test_tools_list_changed_refreshes_what_the_model_is_offered(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("grow", {"name": "fresh_tool"})),
        reply("Added."),
        tool_calls(("fresh_tool", {})),
        reply("It works."),
    )
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server()}}) as app:
        await ready(app)
        await app.service.chat(group(), "grow a tool")
        for _ in range(200):  # the change notification arrives after the call's answer
            if "fresh_tool" in app.tools.names():
                break
            await _tick()
        await app.service.chat(group(), "use it")
    assert "fresh_tool" not in offered(fake_llm, 0)
    assert "fresh_tool" in offered(fake_llm, 2)
    assert tool_results(fake_llm) == ["I am fresh_tool"]


async def test_the_older_protocol_gets_list_changed_and_crashes_too(
    make_app: AppFactory, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that speaks only the initialize handshake: notifications, not the listen
    stream, announce new tools; a crash is seen by the call it breaks."""
    monkeypatch.setattr(ServerConnection, "MODE", "legacy")
    fake_llm.script(
        tool_calls(("grow", {"name": "older_tool"})),
        reply("Added."),
        tool_calls(("crash", {})),
        reply("Crashed."),
    )
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server()}}) as app:
        await ready(app)
        await app.service.chat(group(), "grow a tool")
        for _ in range(200):
            if "older_tool" in app.tools.names():
                break
            await _tick()
        assert "older_tool" in app.tools.names()
        await app.service.chat(group(), "crash it")
        await ready(app)
        assert app.mcp is not None
        assert app.mcp.statuses()[0].restarts == 1
    assert "stopped during the call" in tool_results(fake_llm)[0]


async def test_images_reach_a_vision_model_beside_the_tool_message_and_are_not_stored(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("chart", {})), reply("A small orange chart."))
    async with make_app(
        plugins=[], llm={"vision": True}, mcp={"servers": {"demo": stdio_server()}}
    ) as app:
        await ready(app)
        answer = await app.service.chat(group(), "show me the chart")
        stored = await app.store.load_window(answer.conversation_key, 10)
    messages = fake_llm.chat_requests[-1].json["messages"]
    tool_at = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    assert messages[tool_at]["content"] == "[image: tool image, 4x3, 73 bytes] (shown to you below)"
    shown = messages[tool_at + 1]
    assert shown["role"] == "user"
    assert shown["content"][0] == {"type": "text", "text": "Images returned by chart:"}
    assert shown["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert "base64" not in repr(stored)


async def test_without_vision_an_image_is_described_not_sent(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("chart", {})), reply("I can't see it."))
    async with make_app(plugins=[], mcp={"servers": {"demo": stdio_server()}}) as app:
        await ready(app)
        await app.service.chat(group(), "show me the chart")
    messages = fake_llm.chat_requests[-1].json["messages"]
    assert all(m["role"] != "user" or isinstance(m["content"], str) for m in messages)
    assert tool_results(fake_llm) == [
        "[image: tool image, 4x3, 73 bytes] (not shown: image input is off for this bot)"
    ]


async def test_slash_tools_lists_this_chats_tools_and_their_servers(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    servers = {"demo": stdio_server(admin_only=["wipe"], deny=["crash", "hang"])}
    out = io.StringIO()
    async with make_app(plugins=["plugins.calculator"], mcp={"servers": servers}) as app:
        await ready(app)
        console = ConsoleAdapter(app.platform, stdin=io.StringIO(), stdout=out)
        await console.handle("/tools")
        member = await app.commands.handle(group(user="7"), "tools")
    text = out.getvalue()
    assert "- calculate (plugin plugins.calculator)" in text
    assert "- echo (MCP server demo)" in text
    assert "- wipe (MCP server demo, admins only)" in text
    assert "crash" not in text and "hang" not in text
    assert not member.ok and "admins" in member.text


async def test_a_preset_chooses_the_servers_used_in_a_chat(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("no tools here"), reply("tools here"))
    chats = [{"match": "telegram:-100", "mcp": []}]
    async with make_app(plugins=[], chats=chats, mcp={"servers": {"demo": stdio_server()}}) as app:
        await ready(app)
        await app.service.chat(group(chat="-100"), "hello")
        await app.service.chat(group(chat="-200"), "hello")
    assert "tools" not in fake_llm.chat_requests[0].json
    assert "echo" in offered(fake_llm, 1)


async def test_names_two_servers_share_are_prefixed_with_each_server(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("north_echo", {"text": "n"}), ("south_echo", {"text": "s"})), reply("ok")
    )
    servers = {"north": stdio_server(allow=["echo"]), "south": stdio_server(allow=["echo", "wipe"])}
    async with make_app(plugins=[], mcp={"servers": servers}) as app:
        await ready(app)
        await app.service.chat(group(), "echo twice")
    assert offered(fake_llm, 0) == ["north_echo", "south_echo", "wipe"]
    assert tool_results(fake_llm) == ["echo: n", "echo: s"]


async def test_a_stdio_server_gets_the_configs_env_not_the_bots(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """The demo's env tool reads the stdio environment: config env reaches it, the bot's own
    environment does not (a safe default set only)."""
    fake_llm.script(
        tool_calls(("env", {"name": "DEMO_SETTING"}), ("env", {"name": "OPENAI_API_KEY"})),
        reply("ok"),
    )
    server = stdio_server(env={"DEMO_SETTING": "from-config"})
    async with make_app(plugins=[], mcp={"servers": {"demo": server}}) as app:
        await ready(app)
        await app.service.chat(group(), "read the env")
    assert tool_results(fake_llm) == ["DEMO_SETTING='from-config'", "OPENAI_API_KEY=None"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _tick() -> None:
    await asyncio.sleep(0.05)


async def test_slash_tools_names_a_server_that_is_not_ready_and_why(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    servers = {"broken": {"command": ["/nonexistent/mcp-server"]}}
    async with make_app(plugins=[], mcp={"servers": servers}) as app:
        assert app.mcp is not None
        for _ in range(200):  # the first attempt fails at once; its error is kept
            if app.mcp.statuses()[0].error:
                break
            await _tick()
        result = await app.commands.handle(group(is_admin=True), "tools")
    assert result.private
    assert result.text.startswith("No tools are offered here.")
    assert "MCP servers not ready:\n- broken: retrying in " in result.text
    assert "cannot start '/nonexistent/mcp-server'" in result.text


def test_a_retry_under_way_is_shown_as_such_not_as_due_in_0_s() -> None:
    failed = "no answer within connect_timeout=2 s"
    waiting = ServerStatus("sleepy", "stdio", ServerState.RETRYING, error=failed, retry_in=7.6)
    trying = ServerStatus("sleepy", "stdio", ServerState.RETRYING, error=failed)
    assert waiting.line() == f"sleepy: retrying in 8 s ({failed})"
    assert trying.line() == f"sleepy: retrying now ({failed})"
