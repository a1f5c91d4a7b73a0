"""Server-rendered pages: Jinja2 templates (autoescaped) and the adapter's own static files.

Templates also get ``|markdown`` (an answer as safe HTML: :mod:`.markdown`), ``|clipped``
(a long text cut for a page) and ``counted`` (``1 turn``, ``2 turns``).

Everything a page needs ships in this package (``templates/``, ``static/``): no CDN, no web
font, no external script, so the dashboard works offline and under a strict CSP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from adapters.http.auth import Principal
from adapters.http.dashboard.markdown import markdown_html
from bot.text import counted

__all__ = ["CLIP", "STATIC_DIR", "counted", "render"]

CLIP = 10_000  # characters of one tool's arguments or result a page shows (the API has all)

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=jinja2.select_autoescape(("html",)),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def clipped(text: str, limit: int = CLIP) -> str:
    """``text``, or its first ``limit`` characters and how many more there are."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({counted(len(text) - limit, 'more character')})"


def pretty(text: str) -> str:
    """JSON text indented for reading (anything else as it is)."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        return text


_env.filters["markdown"] = markdown_html
_env.filters["pretty"] = pretty
_env.filters["clipped"] = clipped
_env.globals["counted"] = counted


def render(
    request: web.Request, template: str, *, status: int = 200, **values: Any
) -> web.Response:
    """The page, with ``csrf`` (for forms and fetch calls) and ``user`` filled in."""
    from adapters.http.context import CONTEXT, PRINCIPAL

    principal: Principal | None = request.get(PRINCIPAL)
    csrf = ""
    if principal is not None and principal.via_cookie:
        csrf = request.app[CONTEXT].auth.csrf_token(principal.session)
    html = _env.get_template(template).render(
        csrf=csrf, user=principal.name if principal else "", **values
    )
    response = web.Response(text=html, content_type="text/html", status=status)
    response.headers["Cache-Control"] = "no-store"
    return response
