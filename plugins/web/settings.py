"""The ``plugins.web`` settings (config's ``settings:`` for the plugin), checked at load."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator

__all__ = ["BRAVE_URL", "MAX_PAGE_CHARS", "MAX_TIMEOUT", "Settings"]

BRAVE_URL = "https://api.search.brave.com"
MAX_TIMEOUT = 60.0  # the tools' own time limit is set above it (they are declared once)
MAX_PAGE_CHARS = 20_000


class Settings(BaseModel):
    provider: Literal["searxng", "brave"] = Field(
        "searxng", description="searxng (self-hosted) or brave (Brave Search API)"
    )
    base_url: str | None = Field(
        None,
        validate_default=True,
        description="the search endpoint: your SearxNG's address (required for searxng);"
        f" brave defaults to {BRAVE_URL}",
    )
    api_key: SecretStr | None = Field(
        None,
        validate_default=True,
        description="Brave Search API key (X-Subscription-Token); give it as ${VAR}",
    )
    max_results: int = Field(5, ge=1, le=20, description="results web_search returns at most")
    timeout: float = Field(
        15.0, gt=0, le=MAX_TIMEOUT, description="seconds for one search or one page, in all"
    )
    max_page_bytes: int = Field(
        2_000_000, ge=1024, le=50_000_000, description="bytes of a page read at most"
    )
    max_page_chars: int = Field(
        8000, ge=200, le=MAX_PAGE_CHARS, description="characters of a page given to the model"
    )
    max_redirects: int = Field(5, ge=0, le=10, description="redirects fetch_page follows")
    user_agent: str = Field(
        "Parlour-web/0.1 (chat bot; fetches a page a user asked for)",
        min_length=1,
        max_length=300,
        description="the User-Agent header sent",
    )
    allow_hosts: tuple[str, ...] = Field(
        (),
        description="hosts fetch_page may read on private or loopback addresses (intranets,"
        " tests); link-local and metadata addresses stay refused",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            if info.data.get("provider") == "searxng":
                raise ValueError("SearxNG needs base_url (your instance's address)")
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _key(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if info.data.get("provider") == "brave" and not (value and value.get_secret_value()):
            raise ValueError("Brave Search needs api_key (e.g. api_key: ${BRAVE_API_KEY})")
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(host.strip().strip("[]").rstrip(".").lower() for host in value if host)

    @field_validator("user_agent")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(char in value for char in "\r\n"):
            raise ValueError("must be one line")
        return value

    @property
    def endpoint(self) -> str:
        """The search endpoint's base address."""
        return self.base_url or BRAVE_URL
