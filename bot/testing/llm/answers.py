"""What ``FakeLLM`` answers next: the chat, embeddings and transcription script queues and the
injected fault storm (``fail_every``). A request takes an answer only once it passed
validation."""

from __future__ import annotations

from collections import deque

from bot.testing.llm.script import Script, rate_limited


class ScriptedAnswers:
    """The scripting half of ``FakeLLM`` (its public ``script``, ``fail_every``, ...)."""

    def __init__(self) -> None:
        self._queue: deque[Script] = deque()
        self._fault: Script | None = None
        self._fault_every = 0
        self._fault_count = 0
        self._embedding_queue: deque[Script] = deque()
        self._transcription_queue: deque[Script] = deque()

    def script(self, *items: Script) -> None:
        """Queue answers; valid chat requests take them in order, then get default replies."""
        self._queue.extend(items)

    @property
    def pending_scripts(self) -> int:
        """How many scripted answers are still unused."""
        return len(self._queue)

    def fail_every(self, n: int, failure: Script | None = None) -> None:
        """From now on answer every ``n``-th valid chat request with ``failure``; 0 stops it.

        A fault storm under concurrency ("half the calls get a 429"), which a script queue
        cannot express: concurrent requests and their retries take scripts in arrival order, so
        which user meets which one is luck, and scripted replies all carry one fixed text.
        Counting starts at this call; an injected failure takes no script from the queue, so the
        other requests still get scripts, then default (echo) replies.
        ``failure`` (an ``error``/``rate_limited``/``hang``, optionally delayed) defaults to
        ``rate_limited(retry_after=1)``: a 429 with ``retry-after`` and OpenAI's error body.
        """
        if n < 0:
            raise ValueError("n must be >= 0")
        failure = rate_limited(retry_after=1) if failure is None else failure
        if failure.error is None and not failure.hang:
            raise ValueError("fail_every needs a failure: error(), rate_limited() or hang()")
        self._fault, self._fault_every, self._fault_count = failure, n, 0

    def script_embeddings(self, *items: Script) -> None:
        """Queue answers for valid ``/embeddings`` requests: ``error``, ``delay``, ``hang``.

        A queue of its own, so a memory embedded mid-turn never eats a chat script. Vectors
        are always :func:`fake_embedding`'s, so only failures and timing can be scripted.
        """
        for item in items:
            if item.text is not None or item.tool_calls or item.usage is not None:
                raise ValueError("embeddings scripts can only fail, hang or delay")
        self._embedding_queue.extend(items)

    def script_transcriptions(self, *items: Script) -> None:
        """Queue answers for valid ``/audio/transcriptions`` requests: ``reply(text)`` is the
        transcript heard; ``error``, ``rate_limited``, ``quota_exhausted``, ``delay``,
        ``hang`` as for chat. A queue of its own: a voice note never eats a chat script.
        Unscripted requests hear ``default_transcript`` of their bytes."""
        for item in items:
            if item.tool_calls or item.usage is not None:
                raise ValueError("transcription scripts are a text, a failure, a hang or delay")
        self._transcription_queue.extend(items)

    def _next_transcription_script(self) -> Script | None:
        return self._transcription_queue.popleft() if self._transcription_queue else None

    def _next_chat_script(self) -> Script | None:
        """The injected fault if due, else the next queued script (None: the default reply)."""
        script = self._injected_fault()
        if script is None and self._queue:
            script = self._queue.popleft()
        return script

    def _next_embedding_script(self) -> Script | None:
        return self._embedding_queue.popleft() if self._embedding_queue else None

    def _injected_fault(self) -> Script | None:
        """The ``fail_every`` failure if this valid chat request is an ``n``-th one."""
        if not self._fault_every:
            return None
        self._fault_count += 1
        return self._fault if self._fault_count % self._fault_every == 0 else None
