"""``python -m bot knowledge``: add a folder, skip what did not change, replace what did,
refuse a bad file without touching the base, list and remove."""

from __future__ import annotations

from pathlib import Path

from bot.config import settings_from_mapping
from bot.storage import open_storage
from tests.product.app.test_cli import env_for, run_cli, write_config


async def test_add_list_replace_refuse_and_remove(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    rules: {}\n")
    env = env_for(tmp_path)
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "rules.md").write_text("# Rules\n\nNo spam in #general.\n", encoding="utf-8")
    (docs / "guide" / "setup.txt").write_text("Install it, then run it.", encoding="utf-8")
    (docs / "ignored.png").write_bytes(b"\x89PNG")

    code, out, err = await run_cli("knowledge", "add", "rules", str(docs), env=env)
    assert code == 0, err
    assert out == "rules: 2 added; 0 refused\n"
    code, out, _ = await run_cli("knowledge", "add", "rules", str(docs), env=env)
    assert out == "rules: 2 unchanged; 0 refused\n"

    (docs / "rules.md").write_text("# Rules\n\nNo ads in #general.\n", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    code, out, err = await run_cli(
        "knowledge", "add", "rules", str(docs / "rules.md"), str(tmp_path / "broken.pdf"), env=env
    )
    assert code == 1 and out == "rules: 1 replaced; 1 refused\n"
    assert "refused: broken.pdf: not a readable PDF" in err

    settings = settings_from_mapping({"storage": {"path": str(tmp_path / "bot.db")}})
    async with open_storage(settings) as store:
        found = await store.search_chunks(["rules"], "ads", limit=5)
        assert [(c.source, c.headings) for c in found] == [("rules.md", ("Rules",))]
        assert await store.search_chunks(["rules"], "spam", limit=5) == []

    code, out, _ = await run_cli("knowledge", "list", "rules", env=env)
    assert out.splitlines()[0].startswith("guide/setup.txt\ttext\t1 chunk")
    assert out.endswith("rules: 2 documents\n")
    assert (await run_cli("knowledge", "remove", "rules", "guide/setup.txt", env=env))[0] == 0
    code, _, err = await run_cli("knowledge", "remove", "rules", "guide/setup.txt", env=env)
    assert code == 1 and "no document" in err


async def test_an_undeclared_base_is_refused_with_the_fix(tmp_path: Path) -> None:
    write_config(tmp_path)
    code, _, err = await run_cli("knowledge", "add", "faq", str(tmp_path), env=env_for(tmp_path))
    assert code != 0 and "no knowledge base 'faq'" in err and "knowledge:" in err
    code, _, err = await run_cli("knowledge", env=env_for(tmp_path))
    assert code == 2 and "knowledge add" in err
