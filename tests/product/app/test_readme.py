"""The examples in README.md and docs/*.md are real code: extract them and run them as tests.

``<!-- readme-plugin: NAME.py -->`` before a Python block makes it an importable plugin module
for every example; ``<!-- readme-test ... -->`` before one runs its single ``test_*`` function.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram

ROOT = Path(__file__).resolve().parents[3]  # tests/product/app/ -> the project
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def _examples(pages: list[Path] = DOCS) -> list[tuple[Path, str]]:
    return [
        (page, source)
        for page in pages
        for source in re.findall(
            r"<!-- readme-test.*?-->\n```python\n(.*?)```",
            page.read_text(encoding="utf-8"),
            re.DOTALL,
        )
    ]


def _plugins(pages: list[Path] = DOCS) -> list[tuple[str, str]]:
    return [
        found
        for page in pages
        for found in re.findall(
            r"<!-- readme-plugin: (\S+) -->\n```python\n(.*?)```",
            page.read_text(encoding="utf-8"),
            re.DOTALL,
        )
    ]


def test_readme_keeps_its_examples() -> None:
    assert _examples([README]), "README lost its tested plugin example"
    assert _plugins([README]), "README lost its example plugin"
    assert len(_examples()) >= 4, "README or docs/ lost a tested example"
    assert {"dice.py", "shout.py"} <= {name for name, _ in _plugins()}


@pytest.mark.parametrize(
    "index", range(len(_examples())), ids=[f"{p.name}-{i}" for i, (p, _) in enumerate(_examples())]
)
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
    page, source = _examples()[index]
    exec(compile(source, str(page), "exec"), namespace)
    fixtures = {"fake_llm": fake_llm, "fake_telegram": fake_telegram, "tmp_path": tmp_path}
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 1
    wanted = inspect.signature(tests[0]).parameters
    await tests[0](**{name: fixtures[name] for name in wanted})
