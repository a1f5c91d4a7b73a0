"""``python -m bot knowledge``: add a folder, skip what did not change, replace what did,
refuse a bad file without touching the base, list and remove; reindex a base; a progress bar on
a terminal."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

from bot.config import settings_from_mapping
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from tests.cli_harness import run_on_terminal
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
    assert out == "rules: 2 added; 0 refused; 1 skipped (not a known format)\n"
    code, out, _ = await run_cli("knowledge", "add", "rules", str(docs), env=env)
    assert out == "rules: 2 unchanged; 0 refused; 1 skipped (not a known format)\n"

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


async def test_a_base_taken_out_of_the_config_can_still_be_listed_and_removed(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    old: {}\n")
    (tmp_path / "a.md").write_text("# A\n\nText.\n", "utf-8")
    (tmp_path / "b.md").write_text("# B\n\nMore.\n", "utf-8")
    code, _, err = await run_cli("knowledge", "add", "old", str(tmp_path / "a.md"),
                                 str(tmp_path / "b.md"), env=env_for(tmp_path))  # fmt: skip
    assert code == 0, err
    write_config(tmp_path)  # the base is no longer declared
    code, out, err = await run_cli("knowledge", "list", "old", env=env_for(tmp_path))
    assert code == 0 and "2 documents" in out and "not declared in the config" in err
    code, _, err = await run_cli("knowledge", "remove", "old", env=env_for(tmp_path))
    assert code == 2 and "--all" in err
    code, out, _ = await run_cli("knowledge", "remove", "old", "--all", env=env_for(tmp_path))
    assert code == 0 and out == "old: removed 2 documents\n"


async def test_reindex_rebuilds_a_lost_index(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    rules: {}\n    faq: {}\n")
    env = env_for(tmp_path)
    (tmp_path / "rules.md").write_text("# Rules\n\n## Bans\n\nA week.\n", encoding="utf-8")
    (tmp_path / "setup.txt").write_text("Install it, then run it.", encoding="utf-8")
    assert (await run_cli("knowledge", "add", "rules", str(tmp_path / "rules.md"), env=env))[0] == 0
    assert (await run_cli("knowledge", "add", "faq", str(tmp_path / "setup.txt"), env=env))[0] == 0
    settings = settings_from_mapping({"storage": {"path": str(tmp_path / "bot.db")}})
    async with open_storage(settings) as store:
        before = await store.search_chunks(["rules"], "bans week", limit=5)
        faq = await store.search_chunks(["faq"], "install", limit=5)
    assert before and faq
    with contextlib.closing(sqlite3.connect(tmp_path / "bot.db")) as db, db:
        # the base's index lost, as a restore without the derived index would leave it
        db.execute(
            "DELETE FROM knowledge_fts WHERE rowid IN"
            " (SELECT id FROM knowledge_chunks WHERE base = 'rules')"
        )
    async with open_storage(settings) as store:
        assert await store.search_chunks(["rules"], "bans week", limit=5) == []

    code, out, err = await run_cli("knowledge", "reindex", "rules", env=env)
    assert code == 0, err
    assert out == "rules: reindexed 1 chunk of 1 document\n"
    async with open_storage(settings) as store:
        assert await store.search_chunks(["rules"], "bans week", limit=5) == before
        assert await store.search_chunks(["faq"], "install", limit=5) == faq  # untouched
    code, out, _ = await run_cli("knowledge", "reindex", "faq", env=env)
    assert out == "faq: reindexed 1 chunk of 1 document\n"
    async with open_storage(settings) as store:
        assert await store.search_chunks(["faq"], "install", limit=5) == faq


def test_add_draws_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    rules: {}\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.txt"):
        (docs / name).write_text(f"# {name}\n\nSome text.\n", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    code, out, bar = run_on_terminal(
        "knowledge", "add", "rules", str(docs), env=env_for(tmp_path), cwd=tmp_path
    )
    assert code == 1  # the PDF was refused
    assert out == "rules: 3 added; 1 refused\n"
    assert re.search(r"\rrules +\[#{30}\] +4/4 100%", bar)
    assert "refused: broken.pdf: not a readable PDF" in bar
    assert "[1/4]" not in bar  # the bar instead of a line per file


async def test_with_embeddings_add_gives_every_new_chunk_its_vector(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    write_config(
        tmp_path,
        f"llm:\n  base_url: {fake_llm.base_url}\n  api_key: sk-test-cli\n"
        "memory:\n  embeddings: {model: text-embedding-3-small}\n"
        "knowledge:\n  bases:\n    rules: {}\n",
    )
    (tmp_path / "rules.md").write_text("# Rules\n\nBe kind.\n\n## Bans\n\nNo spam.\n", "utf-8")
    code, out, err = await run_cli("knowledge", "add", "rules", str(tmp_path / "rules.md"),
                                   env=env_for(tmp_path))  # fmt: skip
    assert code == 0, err
    assert out.endswith("embedded 2 chunks (text-embedding-3-small)\n")
    [request] = fake_llm.embedding_requests  # the heading path goes with the text
    assert request.json["input"] == ["Rules\nBe kind.", "Rules\nBans\nNo spam."]
    settings = settings_from_mapping({"storage": {"path": str(tmp_path / "bot.db")}})
    async with open_storage(settings) as store:
        assert await store.unembedded_chunks("text-embedding-3-small", 0, 9) == []


async def test_url_makes_each_source_its_published_address(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    docs: {}\n")
    env = env_for(tmp_path)
    site = tmp_path / "site"
    (site / "setup guide").mkdir(parents=True)
    (site / "setup guide" / "widget.md").write_text("# Widget\n\nHold the button.\n", "utf-8")
    code, _, err = await run_cli(
        "knowledge", "add", "docs", str(site), "--url", "https://docs.example.org/", env=env
    )
    assert code == 0, err
    code, out, _ = await run_cli("knowledge", "list", "docs", env=env)
    assert out.startswith("https://docs.example.org/setup%20guide/widget.md\t")
    code, _, err = await run_cli(
        "knowledge", "add", "docs", str(site), "--url", "https://me:pw@docs.example.org/", env=env
    )
    assert code != 0 and "no user name or secret" in err and "pw" not in err


async def test_a_folders_hidden_and_unknown_files_and_same_named_files(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    notes: {}\n")
    env = env_for(tmp_path)
    vault = tmp_path / "vault"
    for folder in ("a", "b", ".git", ".obsidian"):
        (vault / folder).mkdir(parents=True)
    (vault / "a" / "readme.md").write_text("# A\n\nFirst.\n", "utf-8")
    (vault / "b" / "readme.md").write_text("# B\n\nSecond.\n", "utf-8")
    (vault / ".git" / "notes.txt").write_text("secret", "utf-8")
    (vault / ".obsidian" / "x.md").write_text("# X\n\nsettings", "utf-8")
    (vault / ".env.txt").write_text("TOKEN=1", "utf-8")
    (vault / "photo.png").write_bytes(b"\x89PNG")
    code, out, err = await run_cli("knowledge", "add", "notes", str(vault), env=env)
    assert code == 0, err
    assert out == "notes: 2 added; 0 refused; 1 skipped (not a known format)\n"
    code, out, _ = await run_cli("knowledge", "list", "notes", env=env)
    assert [line.split("\t")[0] for line in out.splitlines()[:-1]] == ["a/readme.md", "b/readme.md"]

    a, b = vault / "a" / "readme.md", vault / "b" / "readme.md"
    code, out, err = await run_cli("knowledge", "add", "notes", str(a), str(b), env=env)
    assert code == 1 and out == "notes: 1 added; 1 refused\n"
    assert "also known as 'readme.md'; add their folder instead" in err

    (tmp_path / "empty").mkdir()
    code, _, err = await run_cli("knowledge", "add", "notes", str(tmp_path / "empty"), env=env)
    assert code == 1 and "no documents found under" in err

    one = vault / "a" / "readme.md"
    url = "https://example.org/house-rules.html"
    code, _, err = await run_cli("knowledge", "add", "notes", str(one), "--url", url, env=env)
    assert code == 0, err
    code, out, _ = await run_cli("knowledge", "list", "notes", env=env)
    assert any(line.startswith(f"{url}\t") for line in out.splitlines())


async def test_bindings_made_in_chats_are_listed_and_taken_back(tmp_path: Path) -> None:
    write_config(tmp_path, "knowledge:\n  bases:\n    faq: {}\n")
    env = env_for(tmp_path)
    settings = settings_from_mapping({"storage": {"path": str(tmp_path / "bot.db")}})
    async with open_storage(settings) as store:
        for chat in ("telegram:-1", "telegram:-2", "discord:9"):
            await store.bind_base(chat, "faq", "u1")
    code, out, _ = await run_cli("knowledge", "list", "faq", env=env)
    assert "bound by /knowledge bind in: discord:9, telegram:-1, telegram:-2" in out
    code, out, _ = await run_cli("knowledge", "unbind", "faq", "telegram:-1", env=env)
    assert code == 0 and out == "faq: unbound from 1 chat\n"
    code, out, _ = await run_cli("knowledge", "unbind", "faq", "--all", env=env)
    assert code == 0 and out == "faq: unbound from 2 chats\n"
    async with open_storage(settings) as store:
        assert await store.base_bindings("faq") == []
