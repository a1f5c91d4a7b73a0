"""Server-rendered pages: Jinja2 templates (autoescaped) and the adapter's own static files.

Everything a page needs ships in this package (``templates/``, ``static/``): no CDN, no web
font, no external script, so the dashboard works offline and under a strict CSP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from adapters.http.auth import Principal

__all__ = ["STATIC_DIR", "render"]

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=jinja2.select_autoescape(("html",)),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


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
