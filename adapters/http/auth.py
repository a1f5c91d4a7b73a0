"""Who is calling: tokens, dashboard sessions, CSRF, and a limit on wrong tokens.

* **Tokens** (``Authorization: Bearer <token>``) are compared with every configured token in
  constant time (``hmac.compare_digest``, all of them, always), so the time an answer takes
  says nothing about how close a guess was. A token is never logged: a caller is named by its
  token's name (``http:ops``).
* **Sessions**: after the login form takes an admin token, the dashboard holds a cookie
  ``parlour_session`` (HttpOnly, SameSite=Strict, Secure when configured) carrying the token's
  name, an expiry, a random session id and an HMAC keyed by that token. Any replica checks it
  alone, and changing the token ends every session made with it; logging out records the id
  as revoked in the shared store (:mod:`adapters.http.revocation`), which every replica reads.
  A cookie without an id (made before ids existed) cannot be revoked, so it is refused.
* **CSRF**: a state-changing request made with the cookie must carry ``X-CSRF-Token`` (or the
  form field ``csrf``) equal to an HMAC of the session: a page on another site can make the
  browser send the cookie, but cannot read the value. Bearer requests need none (a browser
  never adds that header by itself).
* **Wrong tokens** are counted per client address: past ``failed_logins_per_minute`` the
  address gets 429 with Retry-After, whatever it sends, until the minute has passed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum

from aiohttp import web
from cachetools import TTLCache
from pydantic import SecretStr

from adapters.http.revocation import Revocations
from adapters.http.settings import HTTPSettings

__all__ = ["COOKIE", "Auth", "Principal", "Role", "TooManyFailures"]

COOKIE = "parlour_session"
CSRF_HEADER = "X-CSRF-Token"
WINDOW = 60.0  # seconds over which wrong tokens are counted
_SID = re.compile(r"[A-Za-z0-9_-]{22}")  # secrets.token_urlsafe(16)


class Role(StrEnum):
    ADMIN = "admin"  # the admin API, the dashboard, and the chat endpoint
    CHAT = "chat"  # the chat endpoint only


@dataclass(frozen=True, slots=True)
class Principal:
    name: str  # the token's name in config
    role: Role
    via_cookie: bool = False  # a dashboard session: state changes need the CSRF token
    session: str = ""  # the cookie's value (for the CSRF check)
    session_id: str = ""  # the cookie's random id (what a logout revokes)
    expires: int = 0  # when the cookie stops working anyway (how long a revocation is kept)

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    @property
    def audit_name(self) -> str:
        """How the audit trail and the logs name this caller."""
        return f"http:{self.name}"


class TooManyFailures(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many wrong tokens; retry after {retry_after:.0f} s")
        self.retry_after = retry_after


class Auth:
    def __init__(self, settings: HTTPSettings, revocations: Revocations) -> None:
        self.settings = settings
        self.revocations = revocations
        self._tokens: list[tuple[str, Role, bytes]] = [
            (name, Role.ADMIN, _raw(token)) for name, token in settings.admin_tokens.items()
        ] + [(name, Role.CHAT, _raw(token)) for name, token in settings.chat_tokens.items()]
        self._keys = {
            name: hashlib.sha256(b"parlour-session:" + _raw(token)).digest()
            for name, token in settings.admin_tokens.items()
        }
        self._failures: TTLCache[str, deque[float]] = TTLCache(maxsize=100_000, ttl=WINDOW)

    # -- tokens ------------------------------------------------------------------------------

    def check_token(self, presented: str, client: str) -> Principal | None:
        """The principal ``presented`` belongs to, or None (a failure counted for ``client``).
        Raises :class:`TooManyFailures` while ``client`` is over its limit."""
        self.refuse_if_limited(client)
        given = presented.encode()
        found: Principal | None = None
        for name, role, token in self._tokens:  # every one, always: constant time
            if hmac.compare_digest(given, token) and found is None:
                found = Principal(name, role)
        if found is None:
            self._failed(client)
        return found

    def refuse_if_limited(self, client: str) -> None:
        failures = self._failures.get(client)
        if failures is None:
            return
        now = time.monotonic()
        while failures and now - failures[0] >= WINDOW:
            failures.popleft()
        if len(failures) >= self.settings.failed_logins_per_minute:
            raise TooManyFailures(WINDOW - (now - failures[0]))

    def _failed(self, client: str) -> None:
        failures = self._failures.get(client)
        if failures is None:
            failures = self._failures[client] = deque()
        failures.append(time.monotonic())

    # -- dashboard sessions ------------------------------------------------------------------

    def new_session(self, principal: Principal) -> str:
        expires = int(time.time() + self.settings.session_hours * 3600)
        body = f"{principal.name}|{expires}|{secrets.token_urlsafe(16)}"
        return f"{_b64(body.encode())}.{_b64(self._mac(principal.name, body))}"

    async def session(self, cookie: str) -> Principal | None:
        """The admin a valid, unexpired, not logged-out cookie belongs to (None: log in again).

        The signature and expiry are checked first, in memory; only a genuine cookie costs the
        one read of the shared store that says whether it was logged out on any replica."""
        try:
            body_part, mac_part = cookie.split(".", 1)
            body = _unb64(body_part).decode()
            name, expires_text, sid = body.rsplit("|", 2)
            expires = int(expires_text)
            mac = _unb64(mac_part)
        except (ValueError, UnicodeDecodeError):
            return None  # malformed, or an old cookie without a session id
        if name not in self._keys or not hmac.compare_digest(mac, self._mac(name, body)):
            return None
        if expires < time.time() or not _SID.fullmatch(sid):
            return None
        if await self.revocations.revoked(sid):
            return None
        return Principal(
            name, Role.ADMIN, via_cookie=True, session=cookie, session_id=sid, expires=expires
        )

    async def end_session(self, principal: Principal) -> None:
        """Log ``principal``'s cookie out on every replica (a Bearer caller has none)."""
        if principal.via_cookie and principal.session_id:
            await self.revocations.revoke(principal.session_id, principal.expires)

    def csrf_token(self, session: str) -> str:
        """The value pages put in their forms and fetch calls for this session."""
        name = _unb64(session.split(".", 1)[0]).decode().rsplit("|", 2)[0]
        return _b64(hmac.new(self._keys[name], b"csrf:" + session.encode(), "sha256").digest())

    def csrf_ok(self, principal: Principal, presented: str | None) -> bool:
        if not principal.via_cookie:
            return True
        if not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.csrf_token(principal.session).encode())

    def set_cookie(self, response: web.StreamResponse, value: str) -> None:
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(self.settings.session_hours * 3600),
            httponly=True,
            samesite="Strict",
            secure=self.settings.secure_cookies,
            path="/",
        )

    def _mac(self, name: str, body: str) -> bytes:
        return hmac.new(self._keys[name], body.encode(), "sha256").digest()


def _raw(token: SecretStr) -> bytes:
    return token.get_secret_value().encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
