"""The offline demo shows memory and tools: a marker makes the fake model call the real
``remember`` tool, and ``[[context]]`` shows the recalled fact in a later turn (issue 27,
finding 3). Through the service as a plugin author's test would, and through the console with
the very lines README tells a newcomer to type."""

from __future__ import annotations

import re
from pathlib import Path

from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory, private
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

ROOT = Path(__file__).resolve().parents[3]  # tests/product/memory/ -> the project


def readme_demo_lines() -> list[str]:
    """The lines README's Quickstart tells a newcomer to type into the offline chat."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- demo-test: [^\n]*-->\n```text\n(.*?)```", readme, re.DOTALL)
    assert found, "README lost its offline demo lines"
    return found.group(1).splitlines()


async def test_a_marker_runs_remember_and_context_shows_the_recalled_fact(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    mei = private("7", "Mei")
    async with make_app(plugins=["plugins.memory"]) as app:
        stored = await app.service.chat(mei, '[[tool:remember {"fact": "Mei drinks green tea"}]]')
        assert stored.text == "Tool remember returned: Remembered (#1): Mei drinks green tea"
        assert app.memories is not None
        assert [m.text for m in await app.memories.list(mei.chat_key)] == ["Mei drinks green tea"]
        answered = fake_llm.chat_requests[1].json["messages"][-1]  # what the tool returned
        assert answered == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Remembered (#1): Mei drinks green tea",
        }

        await app.service.chat(mei, "how is the weather?")  # a turn in between: still echoed
        revealed = (await app.service.chat(mei, "what tea do I drink? [[context]]")).text

    lines = revealed.splitlines()
    assert lines[0].startswith("What the model was sent (gpt-4o-mini, ")
    assert lines[1].startswith("System prompt (")
    assert "History: 2 earlier user messages" in lines[2]
    recalled = lines.index("Recalled from memory (1 item):")
    assert '"remember","Mei drinks green tea"' in lines[recalled + 1]
    assert "Tools offered (3): forget, recall, remember" in lines
    assert lines[-1] == "This message: what tea do I drink? [[context]]"
    assert "echo: how is the weather?" in revealed  # the history's last messages are quoted


async def test_the_readme_demo_in_the_console(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """``make chat`` against ``make fake-llm`` with README's lines: default plugins, streamed."""
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    lines = readme_demo_lines()
    code, out, err = await run_cli("chat", env=env, stdin="\n".join(lines) + "\n")
    assert code == 0, err
    assert all(r.json.get("stream") for r in fake_llm.chat_requests)
    assert "[using remember]\nTool remember returned: Remembered (#1): I like green tea" in out
    assert "Recalled from memory (1 item):" in out
    assert '"fact":"I like green tea"' in out
    assert "remember" in next(line for line in out.splitlines() if line.startswith("Tools offered"))
    assert "[using calculate]\nTool calculate returned: 2**10 = 1024" in out
