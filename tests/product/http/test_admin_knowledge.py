"""Knowledge bases through the admin API and the dashboard, against the running server: upload
(Markdown and PDF), list, chunks, replaced and unchanged, refused documents (nothing stored),
the size cap (413 before the body is read, or as it streams), undeclared bases, tokens and
CSRF, delete; and the OpenAPI document's new paths."""

from __future__ import annotations

import logging
import re
from typing import Any

import aiohttp
import pytest

from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, logged_in, serve_http
from tests.product.knowledge.test_formats import pdf_with_text

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LIMIT = 4_000  # knowledge.max_file_bytes in these tests
KNOWLEDGE = {
    "bases": {"docs": {"description": "Product docs"}, "empty": {}},
    "max_file_bytes": LIMIT,
}
GUIDE = b"# Setup\n\nRun <script>alert(1)</script> then restart.\n\n## Network\n\nOpen port 8090.\n"
SOURCE = "guides/setup guide.md"  # a slash and a space: a query parameter, never the path


def form(data: bytes, filename: str, **fields: str) -> aiohttp.FormData:
    """A multipart form: ``fields`` first (in order), then the file."""
    body = aiohttp.FormData()
    for name, value in fields.items():
        body.add_field(name, value)
    body.add_field("file", data, filename=filename, content_type="application/octet-stream")
    return body


async def call(
    http: aiohttp.ClientSession, method: str, path: str, status: int = 200, **kw: Any
) -> Any:
    async with http.request(method, path, headers=ADMIN, **kw) as r:
        assert r.status == status, await r.text()
        if status == 204:
            return None
        assert r.content_type == "application/json"
        return await r.json()


async def upload(
    http: aiohttp.ClientSession, data: bytes, filename: str, status: int = 200, **fields: str
) -> Any:
    return await call(
        http, "POST", "/api/knowledge/docs/documents", status, data=form(data, filename, **fields)
    )


async def test_upload_list_chunks_replace_refuse_and_delete(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        serve_http(make_app, knowledge=KNOWLEDGE) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        listed = await call(http, "GET", "/api/knowledge")
        assert listed == {
            "bases": [
                {"name": "docs", "description": "Product docs", "documents": 0},
                {"name": "empty", "description": "", "documents": 0},
            ]
        }
        added = await upload(http, GUIDE, "setup.md", source=SOURCE)
        assert added["outcome"] == "added"
        guide = added["document"]
        assert (guide["source"], guide["format"], guide["chunks"]) == (SOURCE, "markdown", 2)
        assert guide["added_by"] == "http:ops" and guide["tokens"] > 0
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", guide["content_hash"])
        assert guide["added_at"].endswith("+00:00")

        manual = await upload(http, pdf_with_text("Page one text", "Reset with F5"), "manual.pdf")
        assert (manual["outcome"], manual["document"]["source"]) == ("added", "manual.pdf")
        assert manual["document"]["format"] == "pdf"

        documents = await call(http, "GET", "/api/knowledge/docs/documents")
        assert documents["base"] == "docs"
        assert [d["source"] for d in documents["documents"]] == [SOURCE, "manual.pdf"]
        assert documents["documents"][0] == guide
        counts = await call(http, "GET", "/api/knowledge")
        assert [b["documents"] for b in counts["bases"]] == [2, 0]

        one = await call(http, "GET", "/api/knowledge/docs/document", params={"source": SOURCE})
        assert one["document"] == guide
        assert [(c["ordinal"], c["headings"], c["page"], c["text"]) for c in one["chunks"]] == [
            (0, ["Setup"], None, "Run <script>alert(1)</script> then restart."),
            (1, ["Setup", "Network"], None, "Open port 8090."),
        ]
        assert all(c["tokens"] > 0 for c in one["chunks"])
        pdf = await call(
            http, "GET", "/api/knowledge/docs/document", params={"source": "manual.pdf"}
        )
        (first, *_) = pdf["chunks"]  # small pages share a chunk: it starts on page 1
        assert (first["page"], first["headings"]) == (1, [])
        assert "Reset with F5" in " ".join(c["text"] for c in pdf["chunks"])

        same = await upload(http, GUIDE, "setup.md", source=SOURCE)
        assert (same["outcome"], same["document"]) == ("unchanged", guide)
        changed = GUIDE.replace(b"8090", b"8091")
        replaced = await upload(http, changed, "setup.md", source=SOURCE)
        assert replaced["outcome"] == "replaced"
        assert replaced["document"]["content_hash"] != guide["content_hash"]
        again = await call(http, "GET", "/api/knowledge/docs/document", params={"source": SOURCE})
        assert again["chunks"][1]["text"] == "Open port 8091."

        before = await call(http, "GET", "/api/knowledge/docs/documents")
        refused = await upload(http, b"%PDF-1.4\n garbage", "manual.pdf", status=422)
        assert refused["error"]["code"] == "document_refused"
        assert "manual.pdf: not a readable PDF" in refused["error"]["message"]
        unknown = await upload(http, b"\x00\x01", "tool.exe", status=422)
        assert "unsupported format" in unknown["error"]["message"]
        assert await call(http, "GET", "/api/knowledge/docs/documents") == before  # unchanged

        await call(http, "DELETE", "/api/knowledge/docs/document", 204, params={"source": SOURCE})
        gone = await call(
            http, "DELETE", "/api/knowledge/docs/document", 404, params={"source": SOURCE}
        )
        assert gone["error"]["code"] == "document_not_found"
        await call(http, "GET", "/api/knowledge/docs/document", 404, params={"source": SOURCE})
        remaining = await call(http, "GET", "/api/knowledge/docs/documents")
        assert [d["source"] for d in remaining["documents"]] == ["manual.pdf"]
        assert await served.app.store.document_chunks("docs", SOURCE) == []
    assert ADMIN_TOKEN not in caplog.text


async def test_a_file_over_the_limit_is_a_413_and_nothing_is_stored(make_app: AppFactory) -> None:
    async with (
        serve_http(make_app, knowledge=KNOWLEDGE) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        # its Content-Length says so: refused before the body is read
        huge = await upload(http, b"a" * 200_000, "big.txt", status=413)
        assert huge["error"]["code"] == "too_large"
        assert "4,000 bytes (knowledge.max_file_bytes)" in huge["error"]["message"]
        # within the form's slack: refused as it streams past the limit
        over = await upload(http, b"word " * (LIMIT // 5 + 20), "big.txt", status=413)
        assert over["error"]["code"] == "too_large"
        assert "knowledge.max_file_bytes" in over["error"]["message"]
        # exactly the limit is fine, and the server goes on serving
        fits = await upload(http, b"word " * (LIMIT // 5), "fits.txt")
        assert fits["outcome"] == "added"
        listed = await call(http, "GET", "/api/knowledge/docs/documents")
        assert [d["source"] for d in listed["documents"]] == ["fits.txt"]


async def test_undeclared_bases_tokens_and_bad_requests(make_app: AppFactory) -> None:
    async with (
        serve_http(make_app, knowledge=KNOWLEDGE) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        source = {"source": "a.md"}
        for method, path, kw in (
            ("GET", "/api/knowledge/nope/documents", {}),
            ("POST", "/api/knowledge/nope/documents", {"data": form(GUIDE, "a.md")}),
            ("GET", "/api/knowledge/nope/document", {"params": source}),
            ("DELETE", "/api/knowledge/nope/document", {"params": source}),
        ):
            error = await call(http, method, path, 404, **kw)
            assert error["error"]["code"] == "base_not_found", path
            assert "no knowledge base 'nope'" in error["error"]["message"]
        for method, path in (
            ("GET", "/api/knowledge"),
            ("GET", "/api/knowledge/docs/documents"),
            ("POST", "/api/knowledge/docs/documents"),
            ("DELETE", "/api/knowledge/docs/document?source=a.md"),
        ):
            async with http.request(method, path, data=form(GUIDE, "a.md")) as r:
                assert r.status == 401 and (await r.json())["error"]["code"] == "invalid_api_key"
            chat = {"Authorization": f"Bearer {CHAT_TOKEN}"}
            async with http.request(method, path, headers=chat) as r:
                assert r.status == 403
        assert await served.app.store.list_documents("docs") == []

        not_a_form = await call(
            http, "POST", "/api/knowledge/docs/documents", 415, json={"file": "x"}
        )
        assert not_a_form["error"]["code"] == "unsupported_media_type"
        no_file = aiohttp.FormData({"source": "a.md"}, default_to_multipart=True)
        await call(http, "POST", "/api/knowledge/docs/documents", 400, data=no_file)
        for bad in ("bad\x01name.md", "x" * 501):
            await upload(http, GUIDE, "a.md", status=400, source=bad)
        await upload(http, GUIDE, "a.md", status=400, colour="blue")  # no such field
        crowded = aiohttp.FormData(default_to_multipart=True)
        for n in range(9):
            crowded.add_field(f"f{n}", "x")
        crowded.add_field("file", GUIDE, filename="a.md")
        many = await call(http, "POST", "/api/knowledge/docs/documents", 400, data=crowded)
        assert "more than 8 form fields" in many["error"]["message"]
        await call(http, "GET", "/api/knowledge/docs/document", 400)  # no source
        missing = await call(
            http, "GET", "/api/knowledge/docs/document", 404, params={"source": "none.md"}
        )
        assert missing["error"]["code"] == "document_not_found"
        assert await served.app.store.list_documents("docs") == []


async def test_the_openapi_document_describes_the_knowledge_routes(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        document = await call(http, "GET", "/api/openapi.json")
        assert await call(http, "GET", "/api/knowledge") == {"bases": []}  # none declared
    paths = document["paths"]
    assert set(paths["/api/knowledge"]) == {"get"}
    assert set(paths["/api/knowledge/{base}/documents"]) == {"parameters", "get", "post"}
    assert set(paths["/api/knowledge/{base}/document"]) == {"parameters", "get", "delete"}
    post = paths["/api/knowledge/{base}/documents"]["post"]
    body = post["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["required"] == ["file"]
    assert body["properties"]["file"] == {**body["properties"]["file"], "format": "binary"}
    assert {"404", "413", "415", "422"} <= set(post["responses"])
    schemas = document["components"]["schemas"]
    for name in ("KnowledgeBaseList", "KnowledgeDocumentInfo", "KnowledgeChunkInfo"):
        assert name in schemas
    outcome = schemas["KnowledgeUpload"]["properties"]["outcome"]
    assert outcome["enum"] == ["added", "replaced", "unchanged"]


# -- the dashboard ------------------------------------------------------------------------------


async def page_csrf(http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(path) as r:
        assert r.status == 200
        found = re.search(r'name="csrf" value="([^"]+)"', await r.text())
    assert found
    return found.group(1)


async def test_the_dashboard_uploads_lists_shows_chunks_and_removes_with_csrf(
    make_app: AppFactory,
) -> None:
    async with serve_http(make_app, knowledge=KNOWLEDGE) as served:
        store = served.app.store
        async with await logged_in(served) as http:
            async with http.get("/knowledge") as r:
                page = await r.text()
            assert '<a href="/knowledge">Knowledge</a>' in page  # in the navigation
            assert '<a href="/knowledge/docs"><code>docs</code></a>' in page
            assert "Product docs" in page

            # without the CSRF field, or with it anywhere but first: refused, nothing stored
            upload_path = "/knowledge/docs/upload"
            async with http.post(upload_path, data=form(GUIDE, "setup.md")) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
            csrf = await page_csrf(http, "/knowledge/docs")
            late = form(GUIDE, "setup.md")
            late.add_field("csrf", csrf)
            async with http.post(upload_path, data=late) as r:
                assert r.status == 403
            async with http.post(upload_path, data=form(GUIDE, "setup.md", csrf="wrong")) as r:
                assert r.status == 403
            assert await store.list_documents("docs") == []

            fields = {"csrf": csrf, "source": SOURCE}
            async with http.post(
                upload_path, data=form(GUIDE, "setup.md", **fields), allow_redirects=False
            ) as r:
                assert r.status == 303
                location = r.headers["Location"]
            assert location == "/knowledge/docs?done=added&source=guides%2Fsetup+guide.md"
            async with http.get(location) as r:
                page = await r.text()
            assert "<code>guides/setup guide.md</code> added." in page
            link = "/knowledge/docs/document?source=guides%2Fsetup+guide.md"
            assert f'<a href="{link}"><code>guides/setup guide.md</code></a>' in page
            assert "http:ops" in page  # added by

            async with http.get(link) as r:
                chunks = await r.text()
            assert r.status == 200
            assert '<span class="heading-path">Setup › Network</span>' in chunks
            assert "Run &lt;script&gt;alert(1)&lt;/script&gt; then restart." in chunks
            assert "<script>alert(1)" not in chunks  # the text is escaped, never markup

            broken = form(b"%PDF-1.4\n garbage", "broken.pdf", csrf=csrf)
            async with http.post(upload_path, data=broken) as r:
                refused = await r.text()
            assert r.status == 422
            assert "Nothing was added: broken.pdf: not a readable PDF" in refused
            big = form(b"a" * 200_000, "big.txt", csrf=csrf)
            async with http.post(upload_path, data=big) as r:
                assert r.status == 413 and "knowledge.max_file_bytes" in await r.text()
            async with http.get("/knowledge/nope") as r:
                assert r.status == 404
            assert [d.source for d in await store.list_documents("docs")] == [SOURCE]

            remove = "/knowledge/docs/remove"
            async with http.post(remove, data={"source": SOURCE}) as r:
                assert r.status == 403
            async with http.post(
                remove, data={"csrf": csrf, "source": SOURCE}, allow_redirects=False
            ) as r:
                assert r.status == 303
            assert await store.list_documents("docs") == []
            async with http.post(remove, data={"csrf": csrf, "source": SOURCE}) as r:
                assert r.status == 404
