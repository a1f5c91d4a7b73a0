"""`doctor`'s MCP rows: each configured server is started (or reached), listed and judged, against
the real demo server over stdio and streamable HTTP; failures name what to check, never a secret."""

from __future__ import annotations

import re
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.doctor import Check, exit_code
from bot.doctor.report import table
from bot.doctor.runner import diagnose
from bot.testing.fake_llm import FakeLLM
from tests.conftest import make_settings
from tests.mcp_harness import STDIO, free_port
from tests.mcp_harness import http_demo as serve_http_demo
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

WAIT = 30.0  # the LLM rows' limit: a loaded machine is not a slow endpoint
HEADER_SECRET = "Bearer sk-doctor-secret-123"
ENV_SECRET = "env-doctor-secret-456"
QUERY_SECRET = "query-doctor-secret-789"


def row(rows: list[Check], name: str) -> Check:
    [found] = [r for r in rows if r.name == name]
    return found


def running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (a stdio child the doctor started)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(proc.name))
    return found


async def doctor(
    fake_llm: FakeLLM, tmp_path: Path, servers: dict[str, Any], mcp_timeout: float = WAIT
) -> list[Check]:
    settings = make_settings(fake_llm, tmp_path, mcp={"servers": servers})
    return await diagnose(settings, llm_timeout=WAIT, mcp_timeout=mcp_timeout)


@pytest.fixture
async def http_demo() -> AsyncIterator[str]:
    """The demo server over streamable HTTP on a free port, until the test ends."""
    async with serve_http_demo() as url:
        yield url


async def test_a_stdio_server_is_listed_after_the_llm_rows_and_its_child_stopped(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = f"doctor-{uuid.uuid4().hex}"  # an argument the demo server ignores
    rows = await doctor(fake_llm, tmp_path, {"demo": {"command": [*STDIO, marker]}})
    assert [r.name for r in rows] == [
        "config",
        "database",
        "llm models",
        "llm completion",
        "mcp demo",
    ]
    demo = row(rows, "mcp demo")
    assert demo.status == "ok"
    assert re.fullmatch(
        r"\d+ tools via stdio \(protocol [\d-]+\): echo, forecast, chart, manual, fail, hang, "
        r"wipe, pid, \.\.\.",
        demo.detail,
    ), demo.detail
    assert running(marker) == []  # the doctor stopped what it started


async def test_an_http_server_is_listed(fake_llm: FakeLLM, tmp_path: Path, http_demo: str) -> None:
    servers = {"web": {"url": http_demo, "headers": {"Authorization": HEADER_SECRET}}}
    rows = await doctor(fake_llm, tmp_path, servers)
    web = row(rows, "mcp web")
    assert web.status == "ok"
    assert re.match(r"\d+ tools via http \(protocol [\d-]+\): echo, forecast, ", web.detail)
    assert exit_code(rows) == 0


async def test_servers_that_cannot_be_reached_fail_naming_what_to_check_and_no_secret(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    closed = free_port()  # nothing listens there once the probe socket is closed
    servers = {
        "gone": {
            "command": [str(tmp_path / "no-such-mcp-server"), "--serve"],
            "env": {"API_TOKEN": ENV_SECRET},
        },
        "refused": {
            "url": f"http://127.0.0.1:{closed}/mcp?token={QUERY_SECRET}",
            "headers": {"Authorization": HEADER_SECRET},
        },
    }
    rows = await doctor(fake_llm, tmp_path, servers)
    gone, refused = row(rows, "mcp gone"), row(rows, "mcp refused")
    assert (gone.status, refused.status) == ("FAIL", "FAIL")
    assert "no-such-mcp-server" in gone.detail and "not found" in gone.detail
    assert "mcp.servers.gone.command exists" in gone.fix
    assert refused.detail.startswith(f"http://127.0.0.1:{closed}/mcp: cannot list its tools: ")
    assert "mcp.servers.refused.url is reachable" in refused.fix and "headers" in refused.fix
    assert exit_code(rows) == 1
    shown = table(rows, lambda line: line)  # no redactor: nothing to mask was put in
    for secret in (HEADER_SECRET, "sk-doctor-secret", ENV_SECRET, QUERY_SECRET):
        assert secret not in shown


async def test_a_silent_server_fails_after_the_limit_and_is_stopped(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = f"doctor-{uuid.uuid4().hex}"
    silent = [sys.executable, "-c", f"import sys; sys.stdin.read()  # {marker}"]
    rows = await doctor(fake_llm, tmp_path, {"mute": {"command": silent}}, mcp_timeout=1.0)
    mute = row(rows, "mcp mute")
    assert mute.status == "FAIL"
    assert mute.detail.endswith("cannot list its tools: no answer within 1 s")
    assert "mcp.servers.mute.connect_timeout" in mute.fix
    assert running(marker) == []


async def test_a_server_whose_tools_are_all_denied_warns(fake_llm: FakeLLM, tmp_path: Path) -> None:
    servers = {"demo": {"command": STDIO, "deny": ["*"]}}
    rows = await doctor(fake_llm, tmp_path, servers)
    demo = row(rows, "mcp demo")
    assert demo.status == "warn"
    assert "none offered: allow/deny leave out every one (echo, forecast," in demo.detail
    assert "mcp.servers.demo.allow and deny" in demo.fix
    assert exit_code(rows) == 0


async def test_a_tool_the_chat_api_would_refuse_is_named_with_its_reason(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    script = tmp_path / "odd_server.py"
    script.write_text(
        textwrap.dedent(
            """
            from mcp.server.mcpserver import MCPServer

            server = MCPServer("odd")

            @server.tool()
            def pick(kind: str) -> str:
                return kind

            @server.tool()
            def fine(text: str) -> str:
                return text

            server._tool_manager.get_tool("pick").parameters = {
                "type": "object", "anyOf": [{"required": ["kind"]}, {"required": ["other"]}]
            }
            server.run()
            """
        ),
        encoding="utf-8",
    )
    rows = await doctor(fake_llm, tmp_path, {"odd": {"command": [sys.executable, str(script)]}})
    odd = row(rows, "mcp odd")
    assert odd.status == "warn", odd.detail
    assert "2 tools via stdio" in odd.detail
    assert "1 left out (pick: its inputSchema has anyOf at the top level" in odd.detail
    assert odd.detail.endswith("offered: fine")
    assert "oneOf/anyOf/allOf/enum/not" in odd.fix


async def test_a_disabled_server_is_not_started_and_passes(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    servers = {"off": {"command": [str(tmp_path / "not-run")], "enabled": False}}
    rows = await doctor(fake_llm, tmp_path, servers)
    off = row(rows, "mcp off")
    assert (off.status, off.detail) == ("ok", "disabled (enabled: false): not started, not checked")


async def test_the_command_prints_the_server_rows(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(
        tmp_path,
        "mcp:\n  servers:\n"
        f"    demo:\n      command: [{sys.executable}, -m, bot.testing.mcp_demo]\n"
        f"    gone:\n      command: [{tmp_path / 'missing'}]\n"
        "      env:\n        API_TOKEN: ${MCP_TOKEN}\n",
    )
    env = env_for(
        tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET, MCP_TOKEN=ENV_SECRET
    )
    code, out, err = await run_cli("doctor", "--timeout", str(WAIT), env=env)
    assert code == 1, out + err
    demo = next(line for line in out.splitlines() if line.startswith("mcp demo "))
    assert demo.split()[2] == "ok" and " tools via stdio (protocol " in demo
    gone = next(line for line in out.splitlines() if line.startswith("mcp gone "))
    assert gone.split()[2] == "FAIL"
    assert ENV_SECRET not in out + err


async def test_servers_are_checked_at_the_same_time(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """Each of two servers answers only once the other has started: checked one after the other,
    the first would wait out its limit."""
    script = tmp_path / "rendezvous.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys, time
            mine, other = sys.argv[1:3]
            open(mine, "w").close()
            while not os.path.exists(other):
                time.sleep(0.02)
            os.execv(sys.executable, [sys.executable, "-m", "bot.testing.mcp_demo"])
            """
        ),
        encoding="utf-8",
    )
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    servers = {
        "a": {"command": [sys.executable, str(script), one, two]},
        "b": {"command": [sys.executable, str(script), two, one]},
    }
    rows = await doctor(fake_llm, tmp_path, servers)
    assert [(r.name, r.status) for r in rows[-2:]] == [("mcp a", "ok"), ("mcp b", "ok")]
