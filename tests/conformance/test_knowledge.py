"""Knowledge documents, chunks, search over bound bases only, and bindings, on every backend."""

from __future__ import annotations

from bot.storage import Storage
from bot.storage.knowledge import NewChunk, NewDocument

RULES = (
    NewChunk(0, ("Rules",), "No spam in the general channel.", 8),
    NewChunk(1, ("Rules", "Bans"), "A second warning means a ban for a week.", 10, page=2),
)


def document(
    base: str, source: str, chunks: tuple[NewChunk, ...], digest: str = "h1"
) -> NewDocument:
    return NewDocument(base, source, digest, "markdown", "cli", chunks)


async def test_put_list_search_and_replace(storage: Storage) -> None:
    added = await storage.put_document(document("rules", "rules.md", RULES))
    assert added.outcome == "added" and added.document.chunks == 2
    assert added.document.tokens == 18
    again = await storage.put_document(document("rules", "rules.md", RULES))
    assert again.outcome == "unchanged"
    assert again.document.document_id == added.document.document_id

    found = await storage.search_chunks(["rules"], "how long is a ban?", limit=5)
    assert [c.text for c in found] == [RULES[1].text]
    assert found[0].headings == ("Rules", "Bans") and found[0].page == 2
    assert found[0].source == "rules.md" and found[0].score > 0
    # the heading path is searched too
    assert [c.ordinal for c in await storage.search_chunks(["rules"], "bans", limit=5)] == [1]

    changed = (NewChunk(0, ("Rules",), "Links go to the links channel.", 7),)
    replaced = await storage.put_document(document("rules", "rules.md", changed, "h2"))
    assert replaced.outcome == "replaced"
    assert await storage.search_chunks(["rules"], "ban", limit=5) == []
    chunks = await storage.document_chunks("rules", "rules.md")
    assert [c.text for c in chunks] == [changed[0].text]
    assert [d.content_hash for d in await storage.list_documents("rules")] == ["h2"]


async def test_search_sees_only_the_bases_it_is_given(storage: Storage) -> None:
    await storage.put_document(document("rules", "rules.md", RULES))
    await storage.put_document(
        document("faq", "faq.md", (NewChunk(0, (), "The ban appeal form is online.", 7),))
    )
    assert {c.base for c in await storage.search_chunks(["faq"], "ban", limit=9)} == {"faq"}
    assert len(await storage.search_chunks(["faq", "rules"], "ban", limit=9)) == 2
    assert await storage.search_chunks([], "ban", limit=9) == []
    assert await storage.search_chunks(["nobody"], "ban", limit=9) == []
    # user text is searched for, never parsed
    assert await storage.search_chunks(["rules"], 'NEAR( "AND * OR', limit=9) == []


async def test_remove_document_and_base_take_their_chunks(storage: Storage) -> None:
    await storage.put_document(document("rules", "rules.md", RULES))
    await storage.put_document(document("rules", "more.md", RULES))
    assert await storage.remove_document("rules", "more.md")
    assert not await storage.remove_document("rules", "more.md")
    assert await storage.document_chunks("rules", "more.md") == []
    assert len(await storage.search_chunks(["rules"], "ban", limit=9)) == 1
    await storage.bind_base("tg:1", "rules", "u1")
    assert await storage.remove_base("rules") == 1
    assert await storage.list_documents("rules") == []
    assert await storage.search_chunks(["rules"], "ban", limit=9) == []
    assert await storage.bound_bases("tg:1") == []


async def test_bindings_per_chat(storage: Storage) -> None:
    assert await storage.bind_base("tg:1", "rules", "u1")
    assert not await storage.bind_base("tg:1", "rules", "u2")
    assert await storage.bind_base("tg:1", "faq", "u1")
    assert await storage.bind_base("dc:9", "faq", "u3")
    assert await storage.bound_bases("tg:1") == ["faq", "rules"]
    assert await storage.bound_bases("tg:2") == []
    assert await storage.base_bindings("faq") == ["dc:9", "tg:1"]
    assert await storage.base_bindings("nobody") == []
    assert await storage.unbind_base("tg:1", "rules")
    assert not await storage.unbind_base("tg:1", "rules")
    assert await storage.bound_bases("tg:1") == ["faq"]


async def test_reindex_base_rebuilds_the_index_from_the_chunks(storage: Storage) -> None:
    await storage.put_document(document("rules", "rules.md", RULES))
    await storage.put_document(
        document("rules", "faq.md", (NewChunk(0, ("Appeals",), "Write to the mods.", 5),))
    )
    await storage.put_document(
        document("faq", "faq.md", (NewChunk(0, (), "The ban appeal form is online.", 7),))
    )
    queries = ("how long is a ban?", "bans", "appeals", "spam mods")
    before = {q: await storage.search_chunks(["rules", "faq"], q, limit=9) for q in queries}
    faq_before = await storage.search_chunks(["faq"], "ban appeal", limit=9)
    assert all(before.values()) and faq_before

    assert await storage.reindex_base("rules") == 3
    assert await storage.reindex_base("rules") == 3  # again: no entry twice
    # same chunks, same order, same scores (the corpus statistics are what they were)
    assert {q: await storage.search_chunks(["rules", "faq"], q, limit=9) for q in queries} == before
    assert await storage.search_chunks(["faq"], "ban appeal", limit=9) == faq_before  # untouched
    assert await storage.reindex_base("nothing here") == 0
    assert await storage.reindex_base("faq") == 1
    assert await storage.search_chunks(["faq"], "ban appeal", limit=9) == faq_before

    await storage.put_document(document("rules", "more.md", (NewChunk(0, (), "No bots.", 2),)))
    found = await storage.search_chunks(["rules"], "bots", limit=9)
    assert [c.source for c in found] == ["more.md"]


async def test_equal_scores_come_in_document_order(storage: Storage) -> None:
    same = "Quiet hours start at eleven."
    first = tuple(NewChunk(i, (), same, 6) for i in range(3))
    await storage.put_document(document("rules", "a.md", first))
    await storage.put_document(document("rules", "b.md", first))
    found = await storage.search_chunks(["rules"], "quiet hours", limit=9)
    assert [(c.source, c.ordinal) for c in found] == [
        ("a.md", 0), ("a.md", 1), ("a.md", 2), ("b.md", 0), ("b.md", 1), ("b.md", 2),
    ]  # fmt: skip
    assert len({c.score for c in found}) == 1


async def test_chunk_vectors_by_model_and_base_go_with_their_chunks(storage: Storage) -> None:
    await storage.put_document(document("rules", "rules.md", RULES))
    await storage.put_document(
        document("faq", "faq.md", (NewChunk(0, ("FAQ",), "Appeals go by form.", 5),))
    )
    missing = await storage.unembedded_chunks("m1", 0, 10)
    assert [text for _, text in missing] == [
        "Rules\nNo spam in the general channel.",
        "Rules\nBans\nA second warning means a ban for a week.",
        "FAQ\nAppeals go by form.",
    ]
    ids = [i for i, _ in missing]
    await storage.put_chunk_vectors("m1", [(i, [1.0, float(n)]) for n, i in enumerate(ids)])
    assert await storage.unembedded_chunks("m1", 0, 10) == []
    assert [i for i, _ in await storage.unembedded_chunks("m2", ids[0], 10)] == ids[1:]
    found = await storage.chunk_vectors(["rules"], "m1", 2, 10)
    assert [(c.chunk_id, c.base, list(v)) for c, v in found] == [
        (ids[1], "rules", [1.0, 1.0]), (ids[0], "rules", [1.0, 0.0]),
    ]  # fmt: skip
    assert await storage.chunk_vectors(["rules"], "m2", 2, 10) == []  # another model's
    assert await storage.chunk_vectors(["rules"], "m1", 3, 10) == []  # other dimensions
    assert await storage.chunk_vectors([], "m1", 2, 10) == []
    await storage.put_chunk_vectors("m2", [(ids[0], [0.0, 1.0])])  # a new model replaces
    assert [i for i, _ in await storage.unembedded_chunks("m1", 0, 10)] == [ids[0]]

    await storage.remove_document("rules", "rules.md")
    await storage.put_chunk_vectors("m1", [(ids[0], [1.0, 0.0])])  # gone meanwhile: dropped
    assert [c.base for c, _ in await storage.chunk_vectors(["rules", "faq"], "m1", 2, 10)] == [
        "faq"
    ]


async def test_bindings_follow_a_migrated_chat(storage: Storage) -> None:
    await storage.bind_base("tg:-1", "rules", "u1")
    await storage.bind_base("tg:-1", "faq", "u1")
    await storage.bind_base("tg:-100", "faq", "u2")  # the new chat's own binding stays
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.bound_bases("tg:-100") == ["faq", "rules"]
    assert await storage.bound_bases("tg:-1") == []
