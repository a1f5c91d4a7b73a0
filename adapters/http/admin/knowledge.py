"""The admin API's knowledge routes (JSON), and the operations the dashboard's knowledge pages
share with them: the bases config declares, a base's documents, one document's chunks, a
document uploaded (added, replaced or unchanged) and one removed.

The work is the operator's :class:`~bot.platform.operator.KnowledgeShelf` (the core's
``KnowledgeLibrary``): every base must be declared in ``knowledge.bases`` (else a 404), and a
document it refuses stores nothing (a 422 with the reason). A source name may hold slashes and
spaces (the CLI names documents by their path), so it travels as the ``source`` query
parameter, never in the path. An upload is ``multipart/form-data`` with a ``file`` field (and
an optional ``source`` to name it otherwise), read as it arrives and refused with a 413 past
``knowledge.max_file_bytes`` (:mod:`adapters.http.uploads`); it is recorded as added by the
caller's token (``http:<name>``), as the audit trail names it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from adapters.http.admin.chats import iso
from adapters.http.admin.params import BadParameter, is_key
from adapters.http.admin.schemas import (
    Body,
    KnowledgeBaseInfo,
    KnowledgeBaseList,
    KnowledgeChunkInfo,
    KnowledgeDocumentChunks,
    KnowledgeDocumentInfo,
    KnowledgeDocumentList,
    KnowledgeUpload,
)
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, json_error
from adapters.http.uploads import Refused, add_streamed_post, read_upload
from bot.conversation.knowledge_command import document_source
from bot.knowledge.formats import DocumentError
from bot.knowledge.library import UnknownBaseError
from bot.platform.operator import KnowledgeShelf
from bot.storage.knowledge import KnowledgeDocument

__all__ = [
    "MAX_SOURCE",
    "add_routes",
    "bases",
    "document",
    "documents",
    "receive",
    "remove",
]

log = logging.getLogger(__name__)

MAX_SOURCE = 500  # characters of a source name given with an upload
LIMIT = "knowledge.max_file_bytes"
_BASE = "/api/knowledge/{base}"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/api/knowledge", _guarded(list_bases))
    router.add_get(f"{_BASE}/documents", _guarded(list_documents))
    add_streamed_post(web_app, f"{_BASE}/documents", _guarded(upload))
    router.add_get(f"{_BASE}/document", _guarded(get_document))
    router.add_delete(f"{_BASE}/document", _guarded(delete_document))


# -- the operations (the dashboard's pages call them too) -------------------------------------


def _shelf(request: web.Request) -> KnowledgeShelf | None:
    return request.app[CONTEXT].platform.operator.knowledge


def _declared(request: web.Request, base: str) -> KnowledgeShelf:
    """The shelf, once ``base`` is known to be declared (before any body is read)."""
    shelf = _shelf(request)
    if shelf is None or base not in shelf.bases():
        raise UnknownBaseError(f"no knowledge base {base!r} (knowledge.bases)")
    return shelf


def document_info(document: KnowledgeDocument) -> KnowledgeDocumentInfo:
    return KnowledgeDocumentInfo(
        source=document.source,
        format=document.format,
        chunks=document.chunks,
        tokens=document.tokens,
        content_hash=document.content_hash,
        added_by=document.added_by,
        added_at=iso(document.added_at),
    )


async def bases(request: web.Request) -> KnowledgeBaseList:
    shelf = _shelf(request)
    if shelf is None:
        return KnowledgeBaseList(bases=[])
    listed = []
    for name, description in sorted(shelf.bases().items()):
        count = len(await shelf.documents(name))
        listed.append(KnowledgeBaseInfo(name=name, description=description, documents=count))
    return KnowledgeBaseList(bases=listed)


async def documents(request: web.Request, base: str) -> KnowledgeDocumentList:
    found = await _declared(request, base).documents(base)
    return KnowledgeDocumentList(base=base, documents=[document_info(d) for d in found])


async def document(request: web.Request, base: str, source: str) -> KnowledgeDocumentChunks | None:
    """The document ``source`` of ``base`` and its chunks, in order (None: no such document)."""
    shelf = _declared(request, base)
    if not is_key(source):  # a name no document can have
        return None
    found = [d for d in await shelf.documents(base) if d.source == source]
    if not found:
        return None
    chunks = await shelf.chunks(base, source)
    return KnowledgeDocumentChunks(
        base=base,
        document=document_info(found[0]),
        chunks=[
            KnowledgeChunkInfo(
                ordinal=c.ordinal,
                headings=list(c.headings),
                page=c.page,
                tokens=c.tokens,
                text=c.text,
            )
            for c in chunks
        ],
    )


async def receive(request: web.Request, base: str) -> KnowledgeUpload | Refused:
    """Store the posted document in ``base``, or say why the form cannot be taken (413, 415,
    400). Raises ``UnknownBaseError`` (before the body is read) and ``DocumentError``."""
    shelf = _declared(request, base)
    max_bytes = request.app[CONTEXT].platform.settings.knowledge.max_file_bytes
    form = await read_upload(request, max_bytes, limit_name=LIMIT)
    if isinstance(form, Refused):
        return form
    unknown = sorted(set(form.fields) - {"source"})
    if unknown:
        return Refused(400, "invalid_parameter", f"unexpected form fields: {unknown}")
    source = form.fields.get("source", "").strip()
    if not source and not form.filename:
        return Refused(400, "invalid_parameter", "the file has no name: give a source")
    if source and (len(source) > MAX_SOURCE or not is_key(source)):
        message = f"source: 1-{MAX_SOURCE} characters, none a control one"
        return Refused(400, "invalid_parameter", message)
    source = source or document_source(form.filename)
    caller = request[PRINCIPAL].audit_name
    result = await shelf.add(base, source, form.data, caller)
    chunks = result.document.chunks
    log.info(
        "knowledge %s: %s %s (%d chunks) caller=%s", base, source, result.outcome, chunks, caller
    )
    info = document_info(result.document)
    return KnowledgeUpload.model_validate({"outcome": result.outcome, "document": info})


async def remove(request: web.Request, base: str, source: str) -> bool:
    """Remove the document and its chunks (False: there is no such document)."""
    shelf = _declared(request, base)
    if not is_key(source) or not await shelf.remove(base, source):
        return False
    log.info("knowledge %s: %s removed caller=%s", base, source, request[PRINCIPAL].audit_name)
    return True


# -- the routes --------------------------------------------------------------------------------


def _guarded(handler: Handler) -> Handler:
    """The handler with the core's refusals in the API's shape: 400 a bad parameter, 404 an
    undeclared base, 422 a document that cannot be read (the reason as the message)."""

    async def run(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except BadParameter as exc:
            return json_error(400, str(exc), "invalid_parameter")
        except UnknownBaseError as exc:
            return json_error(404, str(exc), "base_not_found")
        except DocumentError as exc:
            return json_error(422, str(exc), "document_refused")

    return run


def _json(body: Body) -> web.Response:
    response = web.json_response(body.model_dump(mode="json"))
    response.headers["Cache-Control"] = "no-store"
    return response


def _no_document() -> web.Response:
    return json_error(404, "no document of that source in this base", "document_not_found")


def _source(request: web.Request) -> str:
    source = request.query.get("source", "")
    if not source:
        raise BadParameter("give the document's source: ?source=...")
    return source


async def list_bases(request: web.Request) -> web.Response:
    return _json(await bases(request))


async def list_documents(request: web.Request) -> web.Response:
    return _json(await documents(request, request.match_info["base"]))


async def upload(request: web.Request) -> web.Response:
    done = await receive(request, request.match_info["base"])
    if isinstance(done, Refused):
        return json_error(done.status, done.message, done.code)
    return _json(done)


async def get_document(request: web.Request) -> web.Response:
    found = await document(request, request.match_info["base"], _source(request))
    return _no_document() if found is None else _json(found)


async def delete_document(request: web.Request) -> web.Response:
    if not await remove(request, request.match_info["base"], _source(request)):
        return _no_document()
    return web.Response(status=204)
