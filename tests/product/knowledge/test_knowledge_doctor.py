"""`doctor`'s knowledge rows: each declared base's documents and where it is searched; an empty
base or one no chat searches is a warning with its fix."""

from __future__ import annotations

from pathlib import Path

from bot.doctor.runner import diagnose
from bot.knowledge.library import add_document
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from tests.conftest import make_settings


async def test_each_base_gets_a_row_and_the_useless_ones_a_fix(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = make_settings(
        fake_llm, tmp_path,
        knowledge={"bases": {"rules": {}, "faq": {}, "staff": {}}},
        chats=[{"match": "telegram:-100", "knowledge": ["rules"]}],
    )  # fmt: skip
    async with open_storage(settings) as store:
        for base in ("rules", "staff"):
            await add_document(
                store, settings, base=base, source=f"{base}.md", data=b"# A\n\nSome text.\n",
                added_by="test", count=lambda text: len(text.split()),
            )  # fmt: skip
    rows = {row.detail.split(":")[0]: row for row in await diagnose(settings, llm_timeout=30)
            if row.name == "knowledge"}  # fmt: skip
    assert rows["rules"].ok and "1 document, 1 chunk; bound by 1 preset" in rows["rules"].detail
    assert not rows["faq"].ok and "empty" in rows["faq"].detail
    assert "knowledge add faq" in rows["faq"].fix
    assert not rows["staff"].ok and "searched in no chat" in rows["staff"].detail
    assert all(row.status == "warn" for row in (rows["faq"], rows["staff"]))  # never a failure
