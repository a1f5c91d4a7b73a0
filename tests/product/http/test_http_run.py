"""``python -m bot run`` with only ``http`` enabled is a deployment of its own; doctor checks it."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from bot.doctor.runner import diagnose
from bot.testing.fake_llm import FakeLLM
from tests.conftest import make_settings
from tests.http_harness import ADMIN_TOKEN, http_section
from tests.mcp_harness import free_port
from tests.product.app.test_cli import env_for, write_config


async def test_run_serves_only_http_and_stops_on_sigterm(fake_llm: FakeLLM, tmp_path: Path) -> None:
    port = free_port()
    write_config(
        tmp_path,
        f"llm:\n  base_url: {fake_llm.base_url}\n"
        f"http:\n  enabled: true\n  listen_port: {port}\n"
        "  admin_tokens:\n    ops: ${ADMIN_TOKEN_FOR_TEST}\n",
    )
    env = env_for(tmp_path, ADMIN_TOKEN_FOR_TEST=ADMIN_TOKEN)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            for _ in range(400):
                try:
                    async with http.get("/healthz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            async with http.get(
                "/api/chats", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
            ) as r:
                assert r.status in (200, 404)  # the token is accepted (routes come with the API)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert ADMIN_TOKEN not in (out + err).decode()


async def test_doctor_says_when_the_port_is_taken(fake_llm: FakeLLM, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        settings = make_settings(fake_llm, tmp_path, http=http_section(listen_port=port))
        rows = await diagnose(settings, llm_timeout=10)
    listen = next(r for r in rows if r.name == "http listen")
    assert listen.status == "FAIL" and f"127.0.0.1:{port}" in listen.detail
    assert next(r for r in rows if r.name == "http settings").status == "ok"
