"""The README's test-kit examples are real code: extract them and run them as tests."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram

README = Path(__file__).resolve().parent.parent / "README.md"


def _examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"<!-- readme-test.*?-->\n```python\n(.*?)```", text, re.DOTALL)


def _plugins() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"<!-- readme-plugin: (\S+) -->\n```python\n(.*?)```", text, re.DOTALL)


def test_readme_keeps_its_examples() -> None:
    assert len(_examples()) >= 3, "README lost a tested example"
    assert _plugins(), "README lost its example plugin"


@pytest.mark.parametrize("index", range(len(_examples())))
async def test_readme_example_runs(
    index: int,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = tmp_path / "readme_plugins"
    plugins.mkdir()
    for name, source in _plugins():  # the README's example plugins, importable by name
        (plugins / name).write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugins))
    namespace: dict[str, Any] = {}
    exec(compile(_examples()[index], str(README), "exec"), namespace)
    fixtures = {"fake_llm": fake_llm, "fake_telegram": fake_telegram, "tmp_path": tmp_path}
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 1
    wanted = inspect.signature(tests[0]).parameters
    await tests[0](**{name: fixtures[name] for name in wanted})
