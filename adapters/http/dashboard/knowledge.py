"""The dashboard's knowledge pages: the bases config declares, a base's documents (an upload
form, a remove button on each) and a document's chunks.

The data and the changes are the admin API's own (:mod:`adapters.http.admin.knowledge`), so a
page and its JSON twin never disagree. The upload form is ``multipart/form-data`` with the CSRF
field first (the guard reads only that part, :mod:`adapters.http.uploads`), read as it arrives
up to ``knowledge.max_file_bytes``; a refused document comes back as the base's page with the
reason, and nothing stored. A document is named by the ``source`` query parameter (a source may
hold slashes and spaces). Every change answers with a redirect, so a reload never repeats it.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from aiohttp import web

from adapters.http.admin import knowledge as knowledge_ops
from adapters.http.admin.knowledge import MAX_SOURCE
from adapters.http.context import CONTEXT, HTTPContext, see_other
from adapters.http.dashboard.render import render
from adapters.http.uploads import Refused, add_streamed_post
from bot.knowledge.formats import FORMATS, DocumentError
from bot.knowledge.library import UnknownBaseError

__all__ = ["add_routes", "base_url", "document_url"]

DONE = ("added", "replaced", "unchanged", "removed")  # the notices a base's page shows


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/knowledge", bases_page)
    router.add_get("/knowledge/{base}", base_page)
    add_streamed_post(web_app, "/knowledge/{base}/upload", upload)
    router.add_post("/knowledge/{base}/remove", remove)
    router.add_get("/knowledge/{base}/document", document_page)


def base_url(base: str, tail: str = "") -> str:
    return f"/knowledge/{quote(base, safe='')}{tail}"


def document_url(base: str, source: str) -> str:
    return base_url(base, "/document?" + urlencode({"source": source}))


def _missing(request: web.Request, what: str) -> web.Response:
    return render(request, "missing.html", status=404, what=what)


def _no_base(request: web.Request, base: str) -> web.Response:
    return _missing(request, f"No knowledge base {base} is declared (knowledge.bases).")


async def bases_page(request: web.Request) -> web.Response:
    listed = await knowledge_ops.bases(request)
    return render(request, "knowledge.html", bases=listed.bases, base_url=base_url)


async def base_page(request: web.Request) -> web.Response:
    return await _base_page(request, request.match_info["base"])


async def _base_page(
    request: web.Request, base: str, *, error: str = "", status: int = 200
) -> web.Response:
    """The base's documents, the upload form, and a notice or the refusal's reason."""
    try:
        listed = await knowledge_ops.documents(request, base)
    except UnknownBaseError:
        return _no_base(request, base)
    shelf = request.app[CONTEXT].platform.operator.knowledge
    description = shelf.bases().get(base, "") if shelf is not None else ""
    done = request.query.get("done", "") if not error else ""
    return render(
        request,
        "knowledge_base.html",
        status=status,
        base=base,
        description=description,
        documents=listed.documents,
        done=done if done in DONE else "",
        source=request.query.get("source", "")[:MAX_SOURCE],
        error=error,
        max_bytes=request.app[CONTEXT].platform.settings.knowledge.max_file_bytes,
        accept=",".join(sorted(FORMATS)),
        max_source=MAX_SOURCE,
        base_url=base_url,
        document_url=document_url,
        when=_when,
    )


def _when(iso_time: str) -> str:
    """An ISO time as the tables show it (UTC, to the minute)."""
    return iso_time[:16].replace("T", " ") + " UTC"


async def upload(request: web.Request) -> web.Response:
    base = request.match_info["base"]
    try:
        result = await knowledge_ops.receive(request, base)
    except UnknownBaseError:
        return _no_base(request, base)
    except DocumentError as exc:
        return await _base_page(request, base, error=f"Nothing was added: {exc}", status=422)
    if isinstance(result, Refused):
        error = f"Nothing was added: {result.message}."
        return await _base_page(request, base, error=error, status=result.status)
    query = urlencode({"done": result.outcome, "source": result.document.source})
    return see_other(base_url(base, f"?{query}"))


def _no_document(request: web.Request, base: str, source: str) -> web.Response:
    return _missing(request, f"No document {source} is in the base {base}.")


async def remove(request: web.Request) -> web.Response:
    base = request.match_info["base"]
    source = str((await request.post()).get("source", ""))
    try:
        removed = await knowledge_ops.remove(request, base, source)
    except UnknownBaseError:
        return _no_base(request, base)
    if not removed:
        return _no_document(request, base, source)
    return see_other(base_url(base, "?" + urlencode({"done": "removed", "source": source})))


async def document_page(request: web.Request) -> web.Response:
    base = request.match_info["base"]
    source = request.query.get("source", "")
    try:
        found = await knowledge_ops.document(request, base, source)
    except UnknownBaseError:
        return _no_base(request, base)
    if found is None:
        return _no_document(request, base, source)
    return render(
        request,
        "knowledge_document.html",
        base=base,
        document=found.document,
        chunks=found.chunks,
        base_url=base_url,
        when=_when,
    )
