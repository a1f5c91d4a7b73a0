"""The knowledge routes of the OpenAPI document (:mod:`adapters.http.admin.knowledge`): their
bodies are the pydantic models the handlers serialise, the upload a multipart form."""

from __future__ import annotations

from adapters.http.admin import schemas
from adapters.http.admin.knowledge import MAX_SOURCE
from adapters.http.admin.openapi_parts import API_ERRORS, JSON, admin, error, ok, path_param

__all__ = ["KNOWLEDGE_MODELS", "knowledge_routes"]

KNOWLEDGE_MODELS: tuple[type[schemas.Body], ...] = (
    schemas.KnowledgeBaseList,
    schemas.KnowledgeDocumentList,
    schemas.KnowledgeDocumentChunks,
    schemas.KnowledgeUpload,
)

_BASE = path_param("base", "the base's name, as config declares it (knowledge.bases)")
_SOURCE = {
    "name": "source",
    "in": "query",
    "required": True,
    "description": "the document's source as listed (may hold slashes and spaces: URL-encode it)",
    "schema": {"type": "string", "minLength": 1},
}
_UPLOAD = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "the document: Markdown, text, HTML, PDF or DOCX, at"
                        " most knowledge.max_file_bytes; its file name names the format",
                    },
                    "source": {
                        "type": "string",
                        "maxLength": MAX_SOURCE,
                        "description": "the name to keep it under (default: the file's name,"
                        " without folders); the same source again replaces it",
                    },
                },
            },
            "encoding": {"file": {"contentType": "application/octet-stream"}},
        }
    },
}


def knowledge_routes() -> JSON:
    unknown = {"404": error("no such base declared in config (knowledge.bases)")}
    missing = {"404": error("no such base, or no document of that source in it")}
    return {
        "/api/knowledge": {
            "get": admin(
                "The knowledge bases config declares, with their documents counted",
                ok("KnowledgeBaseList"),
            )
        },
        "/api/knowledge/{base}/documents": {
            "parameters": [_BASE],
            "get": admin(
                "The base's documents, by source", ok("KnowledgeDocumentList"), errors=unknown
            ),
            "post": admin(
                "Add a document, or replace the one of the same source (unchanged bytes are"
                " not read again); recorded as added by the token (http:<name>)",
                ok("KnowledgeUpload", "added, replaced or unchanged, and the document"),
                requestBody=_UPLOAD,
                errors={
                    **unknown,
                    "400": error("a malformed form, no file field, or a bad source"),
                    "413": error("the file is over knowledge.max_file_bytes (nothing read past)"),
                    "415": error("the body is not multipart/form-data"),
                    "422": error(
                        "a document that cannot be read (unknown format, encrypted or corrupt"
                        " PDF, not UTF-8...): the message says why; nothing was stored"
                    ),
                },
            ),
        },
        "/api/knowledge/{base}/document": {
            "parameters": [_BASE, _SOURCE],
            "get": admin(
                "One document and its chunks in order (heading path, page, tokens, text)",
                ok("KnowledgeDocumentChunks"),
                errors={**missing, "400": error("no source given")},
            ),
            "delete": {
                **admin("Remove the document and its chunks", {"description": "unused"}),
                "responses": {
                    "204": {"description": "removed"},
                    **API_ERRORS,
                    **missing,
                    "400": error("no source given"),
                },
            },
        },
    }
