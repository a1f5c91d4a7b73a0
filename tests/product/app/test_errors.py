"""The exception tree drawn in ``bot/errors.py`` is complete and true.

Every exception class product code defines (``bot``, ``adapters``, ``plugins``) is either drawn
in the tree under its real parent or named in the docstring as deliberately outside it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import bot.errors
from bot.errors import ParlourError

ROOT = Path(bot.errors.__file__).parents[1]
_NODE = re.compile(r"^(?P<indent>[ │├└─]*?)(?P<name>[A-Z]\w+)\s")


def drawn_tree() -> dict[str, str | None]:
    """Class name -> its parent's name, read from the docstring's box drawing."""
    doc = bot.errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        if not line.startswith("    ") or not line.strip():
            continue
        match = _NODE.match(line)
        if match is None:
            continue
        column = len(match.group("indent"))
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[match.group("name")] = stack[-1][1] if stack else None
        stack.append((column, match.group("name")))
    return parents


def product_exceptions() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in ("bot", "adapters", "plugins"):
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if info.name.startswith(("bot.testing", "bot.__main__")):
                continue  # the test kit's fakes; __main__ runs the CLI
            module = importlib.import_module(info.name)
            for _, value in inspect.getmembers(module, inspect.isclass):
                if issubclass(value, BaseException) and value.__module__ == info.name:
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def test_the_tree_is_drawn_from_the_root() -> None:
    tree = drawn_tree()
    assert tree["ParlourError"] is None
    assert tree["LLMContextLengthError"] == "LLMBadRequestError"
    assert len(tree) >= 18


def test_every_parlour_error_is_drawn_under_its_parent() -> None:
    tree = drawn_tree()
    classes = [c for c in product_exceptions() if issubclass(c, ParlourError)]
    assert {c.__name__ for c in classes} >= {"PluginError", "AccessDeniedError"}
    for cls in classes:
        assert cls.__name__ in tree, f"{cls.__module__}.{cls.__name__} is missing from the tree"
        if cls is not ParlourError:
            assert tree[cls.__name__] == cls.__mro__[1].__name__, cls.__name__
    assert set(tree) == {c.__name__ for c in classes}, "the tree draws a class that is gone"


def test_exceptions_outside_the_tree_are_named_as_such() -> None:
    doc = bot.errors.__doc__ or ""
    for cls in product_exceptions():
        if not issubclass(cls, ParlourError):
            assert f"``{cls.__module__}.{cls.__qualname__}``" in doc, cls.__qualname__
