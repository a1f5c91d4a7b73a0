"""The README's test-kit example is real code: extract it and run it as a test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bot.testing.fake_llm import FakeLLM

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- readme-test.*?-->\n```python\n(.*?)```", text, re.DOTALL)
    assert match, "README lost its tested example"
    return match.group(1)


async def test_readme_example_runs(fake_llm: FakeLLM, tmp_path: Path) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_example(), str(README), "exec"), namespace)
    await namespace["test_my_bot"](fake_llm, tmp_path)
