"""The examples in README.md and docs/*.md are real code: extract them and run them as tests.

``<!-- readme-plugin: NAME.py -->`` (or ``<!-- plugin-project: NAME.py -->``, a file at the root of
docs/plugins.md's example project) before a Python block makes it an importable plugin module for
every example; ``<!-- readme-test ... -->`` (or ``<!-- plugin-project: tests/NAME.py -->``) before
one runs each of its ``test_*`` functions, as a test of its own.
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
            r"<!-- (?:readme-test|plugin-project: tests/\S+\.py).*?-->\n```python\n(.*?)```",
            page.read_text(encoding="utf-8"),
            re.DOTALL,
        )
    ]


def _tests(pages: list[Path] = DOCS) -> list[tuple[Path, str, str]]:
    """Each test function of each example: (page, the block, the function's name)."""
    return [
        (page, source, name)
        for page, source in _examples(pages)
        for name in re.findall(r"^(?:async )?def (test_\w+)", source, re.MULTILINE)
    ]


def _plugins(pages: list[Path] = DOCS) -> list[tuple[str, str]]:
    return [
        found
        for page in pages
        for found in re.findall(
            r"<!-- (?:readme-plugin|plugin-project): (\w+\.py) -->\n```python\n(.*?)```",
            page.read_text(encoding="utf-8"),
            re.DOTALL,
        )
    ]


def test_readme_keeps_its_examples() -> None:
    assert _examples([README]), "README lost its tested plugin example"
    assert _plugins([README]), "README lost its example plugin"
    assert len(_examples()) >= 4, "README or docs/ lost a tested example"
    assert {"dice.py", "shout.py"} <= {name for name, _ in _plugins()}
    assert {"test_roll_dice", "test_admins_set_the_limit"} <= {name for *_, name in _tests()}


@pytest.mark.parametrize(
    "index", range(len(_tests())), ids=[f"{p.name}-{name}" for p, _, name in _tests()]
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
    page, source, name = _tests()[index]
    exec(compile(source, str(page), "exec"), namespace)
    fixtures = {"fake_llm": fake_llm, "fake_telegram": fake_telegram, "tmp_path": tmp_path}
    test = namespace[name]
    wanted = inspect.signature(test).parameters
    await test(**{arg: fixtures[arg] for arg in wanted})
