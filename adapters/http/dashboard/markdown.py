"""The bot's answers as the dashboard shows them: Markdown rendered to HTML that cannot run.

An answer is text a model wrote, often after reading a web page or a tool's output, so it is
hostile input. markdown-it-py with ``html`` off escapes every tag in it (``<script>`` shows as
text); links keep only ``http``, ``https`` and ``mailto`` targets (anything else, such as
``javascript:``, stays the literal text the model wrote); images are not loaded (a remote
picture would tell its server who reads the dashboard, and when): ``![x](url)`` is a link.
Links open in a new tab without a referrer, so the dashboard's chat URLs stay private.
The page's Content-Security-Policy (no inline script) is a second wall, not the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

__all__ = ["LINK_SCHEMES", "markdown_html"]

LINK_SCHEMES = frozenset({"http", "https", "mailto"})


class _Parser(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # markdown-it's hook name
        """Only absolute http(s) and mailto links (no relative path into the dashboard)."""
        try:
            scheme = urlsplit(url.strip()).scheme.lower()
        except ValueError:
            return False
        return scheme in LINK_SCHEMES


def _link_open(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    index: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    tokens[index].attrSet("rel", "noopener noreferrer nofollow")
    tokens[index].attrSet("target", "_blank")
    return renderer.renderToken(tokens, index, options, env)


# breaks: a newline is a line break, as the chat showed it
_MD = _Parser("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
_MD.enable(["strikethrough", "table"]).disable("image")
_MD.add_render_rule("link_open", _link_open)


def markdown_html(text: Any) -> Markup:
    """``text`` (Markdown) as safe HTML for a template (``{{ answer|markdown }}``)."""
    return Markup(_MD.render(str(text or "")))  # escaped by markdown-it: html is off
