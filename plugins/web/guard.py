"""Fetching one URL from the public web, and nothing else: the SSRF guard.

A model asked to "read this link" must not become a way into the bot's own machine, its
network or its cloud's metadata service. For every hop (the URL given, then each redirect):

1. the URL is checked alone: ``http`` or ``https``, no credentials, a host, no odd numeric
   forms of an address (``127.1``, ``0x7f.0.0.1``);
2. the host is resolved **once**, here, and every address it resolves to must be public
   (:mod:`plugins.web.addresses`); a name refused by name (``localhost``, metadata names) is
   not even looked up;
3. the connection goes to those checked addresses only: the session's resolver
   (:class:`PinnedResolver`) answers with what step 2 vetted and knows no other host, so a DNS
   answer that changes between the check and the connection (rebinding) is never used.

Redirects are followed by hand (at most ``max_redirects``), each through the same steps. The
body is read as a stream and cut at ``max_bytes`` (after decompression, done here with a bounded
``zlib``); one deadline covers every lookup, hop and byte. No proxy from the environment is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from bot.plugins import UserFacingError
from plugins.web.addresses import IPAddress, address_refusal, name_refusal, parse_address

__all__ = ["FetchLimits", "Fetched", "PinnedResolver", "fetch", "lookup", "normal_host"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_URL = 4096
_CHUNK = 64 * 1024
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def _refused(reason: str) -> UserFacingError:
    """A refusal of one URL; ``chat_text`` completes "<url> is not fetched: "; the caller
    names the URL (the first one, or a redirect's target)."""
    return UserFacingError(reason, chat_text=reason)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    timeout: float  # seconds for the whole fetch: lookups, redirects, body
    max_bytes: int  # of the body after decompression; the rest is not read
    user_agent: str
    max_redirects: int = 5
    allow_hosts: frozenset[str] = frozenset()  # normal_host() forms exempt from the range check
    accept: frozenset[str] = frozenset()  # media types read; empty: any


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str  # the final URL, after redirects
    content_type: str  # the media type, lower case ("" when the server named none)
    charset: str | None
    body: bytes
    truncated: bool  # the body went on past max_bytes


async def lookup(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, from one lookup (the connection uses these)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = (parse_address(str(info[4][0])) for info in infos)
    return list(dict.fromkeys(address for address in found if address is not None))


@dataclass
class PinnedResolver(AbstractResolver):
    """aiohttp's resolver for one fetch: it answers only with addresses :func:`fetch` vetted."""

    _pins: dict[tuple[str, int], list[ResolveResult]] = field(default_factory=dict)

    def pin(self, host: str, port: int, addresses: Iterable[IPAddress]) -> None:
        self._pins[(normal_host(host), port)] = [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for address in addresses
        ]

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        pinned = self._pins.get((normal_host(host), port))
        if not pinned:
            raise OSError(f"{host} was not vetted for this fetch")
        if family in (socket.AF_INET, socket.AF_INET6):
            pinned = [result for result in pinned if result["family"] == family]
        return pinned

    async def close(self) -> None:
        self._pins.clear()


def normal_host(host: str) -> str:
    """A host as compared and pinned: lower case, no brackets, no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def checked_url(text: str, base: URL | None = None) -> URL:
    """``text`` (relative to ``base``, for a redirect) as an absolute URL fit to fetch."""
    if len(text) > MAX_URL:
        raise _refused(f"the URL is longer than {MAX_URL} characters")
    try:
        url = URL(text.strip())
        if base is not None:
            url = base.join(url)
    except (ValueError, TypeError):
        raise _refused("it is not a valid URL") from None
    if not url.scheme:
        raise _refused("it is not a full URL; give one starting with https:// or http://")
    if url.scheme.lower() not in ("http", "https"):
        raise _refused(f"{url.scheme}: is not http or https (only web pages are fetched)")
    if url.user is not None or url.password is not None:
        raise _refused("it holds a user name or password, which are never sent")
    host = normal_host(url.raw_host or "")
    if not host:
        raise _refused("it names no host")
    if parse_address(host) is None and all(_NUMERIC_LABEL.match(p) for p in host.split(".")):
        raise _refused(f"{host} is an unusual way to write an address")
    return url.with_fragment(None)


async def vetted_addresses(url: URL, allow_hosts: frozenset[str]) -> list[IPAddress]:
    """The addresses ``url``'s host may be reached at, each checked; else a refusal."""
    host = normal_host(url.raw_host or "")
    allowed = host in allow_hosts
    literal = parse_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        named = name_refusal(host)
        if named is not None and (named.always or not allowed):
            raise _refused(f"{host} is {named.reason}")
        try:
            addresses = await lookup(host, url.port or 0)
        except (OSError, UnicodeError):
            raise _refused(f"the name {host} does not resolve") from None
        if not addresses:
            raise _refused(f"the name {host} does not resolve")
    for address in addresses:
        why = address_refusal(address)
        if why is not None and (why.always or not allowed):
            where = f"{address} is" if literal is not None else f"{host} resolves to {address},"
            raise _refused(f"{where} {why.reason}")
    return addresses


async def fetch(text: str, limits: FetchLimits) -> Fetched:
    """GET the page at ``text`` under the guard; a refusal or failure is a UserFacingError."""
    try:
        url = checked_url(text)
    except UserFacingError as refused:
        raise _error(f"{_shown(text)} is not fetched: {refused.chat_text}.") from None
    resolver = PinnedResolver()
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, force_close=True)
    headers = {
        "User-Agent": limits.user_agent,
        "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,*/*;q=0.1",
        "Accept-Encoding": "gzip, deflate",
    }
    async with aiohttp.ClientSession(
        connector=connector, headers=headers, auto_decompress=False, trust_env=False
    ) as session:
        try:
            async with asyncio.timeout(limits.timeout):
                return await _follow(session, resolver, url, limits)
        except TimeoutError:
            raise _error(f"{url} did not answer within {limits.timeout:g} seconds.") from None
        except aiohttp.ClientError as exc:
            raise _error(f"could not fetch {url}: {_failure(exc)}.") from None


async def _follow(
    session: aiohttp.ClientSession, resolver: PinnedResolver, start: URL, limits: FetchLimits
) -> Fetched:
    url = start
    for hop in range(limits.max_redirects + 1):
        try:
            addresses = await vetted_addresses(url, limits.allow_hosts)
        except UserFacingError as refused:
            what = f"{start} redirects to {url}, which" if hop else str(url)
            raise _error(f"{what} is not fetched: {refused.chat_text}.") from None
        resolver.pin(url.raw_host or "", url.port or 0, addresses)
        async with session.get(url, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status in REDIRECTS and location:
                try:
                    url = checked_url(location, url)
                except UserFacingError as refused:
                    raise _error(
                        f"{start} redirects to {_shown(location)}, which is not fetched:"
                        f" {refused.chat_text}."
                    ) from None
                continue
            return await _read(response, url, limits)
    raise _error(f"{start} redirects more than {limits.max_redirects} times; not followed.")


async def _read(response: aiohttp.ClientResponse, url: URL, limits: FetchLimits) -> Fetched:
    """The body, streamed and cut at ``max_bytes``; refused early when it is not text."""
    if response.status >= 400:
        raise _error(f"{url} answered {response.status} {response.reason or ''}".rstrip() + ".")
    content_type = response.content_type if "Content-Type" in response.headers else ""
    if limits.accept and content_type and content_type not in limits.accept:
        raise _error(
            f"{url} is {content_type}, not a web page or text; images, PDF and other files"
            " are not read."
        )
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise _error(f"{url} is compressed as {encoding!r}, which this tool does not read.")
    inflate = zlib.decompressobj(47) if encoding not in ("", "identity") else None  # zlib/gzip
    body = bytearray()
    truncated = False
    try:
        async for chunk in response.content.iter_chunked(_CHUNK):
            room = limits.max_bytes - len(body)
            # room + 1: one byte past the limit says there is more (and 0 means "no limit")
            data = inflate.decompress(chunk, room + 1) if inflate is not None else chunk
            body += data[:room]
            if len(data) > room:
                truncated = True
                break
    except zlib.error:
        raise _error(f"{url} sent a damaged compressed body.") from None
    if truncated:
        response.close()  # stop the transfer: nothing past max_bytes is read
    return Fetched(str(url), content_type, response.charset, bytes(body), truncated)


def _failure(exc: aiohttp.ClientError) -> str:
    """A short reason for the model; never a library's full text (it may carry internals)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
        return "its TLS certificate or handshake is not valid"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "the server could not be reached"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return "the server broke off the answer"
    if isinstance(exc, aiohttp.ClientResponseError):
        return "the server's answer was not valid HTTP"
    return f"the request failed ({type(exc).__name__})"


def _shown(text: str) -> str:
    """A URL as quoted in a message: without user name or password, one line, capped."""
    with contextlib.suppress(ValueError, TypeError):
        text = str(URL(text.strip()).with_user(None))
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else flat[:200] + "…"


def _error(text: str) -> UserFacingError:
    return UserFacingError(text, chat_text=text)
