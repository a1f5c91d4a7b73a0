"""A scheduled post as plain data: where it goes, when it runs, what it asks the model.

The job's payload *is* the record (the job store is durable on both backends and shared by
replicas), so nothing else has to be kept in step with it: listing reads the scheduler's
pending jobs of :data:`~bot.scheduling.kinds.SCHEDULED_POSTS_KIND`, cancelling withdraws the
job. Kept here, below the platform seam, so the operator's view can name it; running one is
:mod:`bot.conversation.scheduled_posts`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.context import ChatContext, ChatType
from bot.scheduling.recurrence import Recurrence

__all__ = ["JOB_PREFIX", "PostTarget", "ScheduledPost", "job_id", "post_id_of"]

JOB_PREFIX = "schedules:"


def job_id(post_id: int) -> str:
    return f"{JOB_PREFIX}{post_id}"


def post_id_of(text: str) -> int | None:
    """A post's number from ``7``, ``#7`` or its job id ``schedules:7`` (None: not one)."""
    digits = text.strip().removeprefix(JOB_PREFIX).removeprefix("#")
    return int(digits) if digits.isdigit() and len(digits) < 12 else None


@dataclass(frozen=True, slots=True)
class PostTarget:
    """The chat (and thread or topic) a post goes to."""

    platform: str
    chat_id: str
    thread_id: str | None = None
    chat_type: ChatType = ChatType.GROUP
    title: str = ""

    @property
    def chat_key(self) -> str:
        return f"{self.platform}:{self.chat_id}"


@dataclass(frozen=True, slots=True)
class ScheduledPost:
    id: int
    target: PostTarget
    recurrence: Recurrence
    prompt: str
    created_by: str  # "telegram:7", "http:ops"
    created_by_name: str
    created_at: datetime
    next_run: datetime | None = None  # as listed (None: not read from the scheduler)
    attempts: int = 0  # a one-off put off because no adapter could post it

    @property
    def job_id(self) -> str:
        return job_id(self.id)

    @property
    def speaker_id(self) -> str:
        """Whom the run speaks as: its own id, so the ledger books its cost apart, and no
        person's rate, one-in-flight or private conversation is used by it."""
        return f"schedule-{self.id}"

    def context(self, title: str = "") -> ChatContext:
        """The run's neutral event: the chat, as this post's own member (never an admin)."""
        target = self.target
        return ChatContext(
            platform=target.platform,
            chat_id=target.chat_id,
            chat_type=target.chat_type,
            user_id=self.speaker_id,
            user_name=f"Scheduled post #{self.id}",
            thread_id=target.thread_id,
            chat_title=title or target.title,
        )

    def payload(self) -> dict[str, Any]:
        target = self.target
        return {
            "id": self.id,
            "chat_key": target.chat_key,
            "platform": target.platform,
            "chat_id": target.chat_id,
            "thread_id": target.thread_id,
            "chat_type": target.chat_type.value,
            "title": target.title,
            "recurrence": self.recurrence.to_json(),
            "prompt": self.prompt,
            "created_by": self.created_by,
            "created_by_name": self.created_by_name,
            "created_at": self.created_at.astimezone(UTC).isoformat(),
            "attempts": self.attempts,
        }

    @classmethod
    def from_payload(
        cls, payload: dict[str, Any], next_run: datetime | None = None
    ) -> ScheduledPost:
        target = PostTarget(
            platform=str(payload["platform"]),
            chat_id=str(payload["chat_id"]),
            thread_id=None if payload.get("thread_id") is None else str(payload["thread_id"]),
            chat_type=ChatType(str(payload.get("chat_type") or ChatType.GROUP.value)),
            title=str(payload.get("title") or ""),
        )
        return cls(
            id=int(payload["id"]),
            target=target,
            recurrence=Recurrence.from_json(dict(payload["recurrence"])),
            prompt=str(payload["prompt"]),
            created_by=str(payload.get("created_by") or ""),
            created_by_name=str(payload.get("created_by_name") or ""),
            created_at=datetime.fromisoformat(str(payload["created_at"])),
            next_run=next_run,
            attempts=int(payload.get("attempts") or 0),
        )

    def tried(self) -> ScheduledPost:
        """The same post, one more attempt used."""
        return replace(self, attempts=self.attempts + 1)
