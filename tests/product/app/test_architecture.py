"""The layering drawn in docs/architecture.md holds in the code: every import between areas of
``bot/`` points down, and the page names every folder and top-level module (read from the
imports, nothing run)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "architecture.md"


def layers() -> dict[str, int]:
    """Area -> its height (0 is the ground), from the page's ``layers`` block."""
    block = re.search(r"```layers\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert block, "docs/architecture.md has no ```layers block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    height = {}
    for level, line in enumerate(reversed(lines)):
        for name in line.split(","):
            height[name.strip()] = level
    return height


def area_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "bot" and len(parts) > 1 else None


def imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (TYPE_CHECKING and function-level imports included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "bot":  # from bot import metrics: an area by name
                found += [(node.lineno, f"bot.{alias.name}") for alias in node.names]
    return found


def test_every_import_between_areas_points_down() -> None:
    height = layers()
    wrong = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel == Path("bot/__init__.py"):
            continue  # the public face: it re-exports from every area
        source = area_of(".".join(rel.with_suffix("").parts))
        assert source in height, f"{rel}: area {source!r} is not in the layers block"
        for line, module in imports(path):
            target = area_of(module)
            if target is None or target == source:
                continue
            assert target in height, f"{rel}:{line}: area {target!r} is not in the layers block"
            if height[target] >= height[source]:
                wrong.append(f"{rel}:{line} ({source}) imports {module} ({target})")
    assert not wrong, "imports against docs/architecture.md's layers:\n" + "\n".join(wrong)


def test_the_page_names_every_folder_and_top_level_module() -> None:
    page = PAGE.read_text(encoding="utf-8")
    folders = {
        path.parent.relative_to(ROOT).as_posix() + "/"
        for top in ("bot", "adapters")
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    missing = sorted(folder for folder in folders if f"`{folder}`" not in page)
    top_row = next(line for line in page.splitlines() if line.startswith("| `bot/` (top level)"))
    modules = sorted(
        path.name
        for path in (ROOT / "bot").glob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )
    missing += [f"bot/{name}" for name in modules if f"`{name}`" not in top_row]
    assert not missing, "docs/architecture.md's layout does not name: " + ", ".join(missing)
    assert set(layers()) >= {path.parent.name for path in (ROOT / "bot").glob("*/__init__.py")} | {
        path.stem for path in (ROOT / "bot").glob("*.py") if path.name != "__init__.py"
    }


def test_no_adapter_imports_the_app() -> None:
    """Adapters are given ``bot.platform.seam.Platform``; the whole app stays out of reach."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "adapters").rglob("*.py"))
        for line, module in imports(path)
        if module == "bot.app" or module.startswith("bot.app.")
    ]
    assert not wrong, "adapters import bot.app:\n" + "\n".join(wrong)
