"""Parlour's exception tree: one root, and a clear line between chat-safe and internal text.

    ParlourError                      root of everything Parlour raises on purpose
    ├── ConfigError                   invalid config.yaml / environment (names the field)
    ├── StoreError                    the history database is unusable
    ├── PluginError                   a plugin could not be loaded (bot.plugins.loader)
    ├── ToolDefinitionError           a tool declared wrongly (bot.plugins.declare)
    ├── DocumentError                 a document a knowledge base cannot take (knowledge.formats)
    ├── UnknownBaseError              a knowledge base config does not declare (knowledge.library)
    └── UserFacingError               carries ``chat_text``: safe to show in a chat
        ├── AccessDeniedError         this chat or user may not use the bot (guardrails.access)
        ├── RateLimitedError          too many messages from one user (guardrails.rate_limit)
        ├── StillAnsweringError       wrote again while answered, too many waiting (same)
        ├── MessageFolded             answered with an earlier message of its burst
        ├── BudgetSpentError          a daily token budget is used up (guardrails.budgets)
        ├── ContextTooLongError       the newest message cannot fit the model's window
        ├── MediaRefusedError         an image or voice note the bot will not take (platform.media)
        ├── CatchupRefusedError       a /catchup that cannot be made here (conversation.catchup)
        ├── ScheduleError             a schedule the bot cannot take (scheduling.recurrence)
        └── LLMError                  the model call failed after retries and fallbacks
            ├── LLMBusyError          rate limited / overloaded: try again shortly
            ├── LLMQuotaError         quota or billing exhausted (not a rate limit)
            ├── LLMAuthError          key rejected (401/403)
            ├── LLMUnavailableError   5xx, timeouts, refused connections, model not found
            └── LLMBadRequestError    the provider rejected the request (400/422)
                └── LLMContextLengthError  the provider says the prompt is too long

Outside the tree, on purpose: ``adapters.telegram.output.Undeliverable`` (a chat that cannot
receive messages; never leaves the Telegram adapter) and ``plugins.calculator.CalculationError``
(a ``ValueError`` the tool turns into its answer to the model), and
``bot.mcp.connection.ServerUnavailableError`` (a call to an MCP server that is restarting;
the tool's answer to the model says so, it never leaves the MCP manager),
``adapters.http.auth.TooManyFailures`` (a client past its wrong-token limit: a 429 from the
HTTP guard) and ``adapters.http.openai.errors.APIError`` (an answer of the chat endpoint in
OpenAI's error shape; the HTTP adapter turns it into the response). The admin API's
``adapters.http.admin.chat_ops.UnknownChat``, ``adapters.http.admin.chat_ops.MemoryOff`` (404),
``adapters.http.admin.chat_ops.BadSetting`` (a scope or persona the chat cannot take: 400),
``adapters.http.admin.schedules.SchedulesOff`` (404: scheduled posts are switched off) and
``adapters.http.admin.params.BadParameter`` (400) become its answers, never leaving the adapter;
``adapters.http.openai.once.ClientGoneError`` (a client that hung up before its answer) stops
the turn and is answered with nothing.
``bot.config.base.FixableValueError`` is a ``ValueError`` a config validator raises inside
pydantic; it reaches the caller as a :class:`ConfigError` whose ``fix`` it gave.
``bot.config.base.ShownValueError`` is one whose message may quote the value given (a time
zone's name, never a secret); others have it masked.
``tests/product/app/test_errors.py`` checks
that every ``ParlourError`` subclass is drawn here under its real parent.

``str(exc)`` is for logs (ids, status codes; never secrets). ``exc.chat_text`` is what an
adapter may post in a chat.
"""

from __future__ import annotations


class ParlourError(Exception):
    """Root of every exception Parlour raises deliberately."""


class ConfigError(ParlourError):
    """The configuration is invalid; the message names the field and the reason.

    ``fix``, when the raiser knows it, is what to do about it: ``str()`` says the problem and
    then the fix (one sentence for ``run``), while ``doctor`` shows ``problem`` as what it
    found and ``fix`` on its fix line, so the two can never disagree.
    """

    def __init__(self, problem: str = "", *, fix: str = "") -> None:
        super().__init__(f"{problem}: {fix}" if fix else problem)
        self.problem = problem
        self.fix = fix


class StoreError(ParlourError):
    """The history store cannot be used (bad path, newer schema, corrupt file)."""


class UserFacingError(ParlourError):
    """An error whose ``chat_text`` may be shown to chat users."""

    chat_text: str = "Something went wrong; please try again."
    notify: bool = True  # False: the user was already told (a flood's repeats); post nothing

    def __init__(
        self, message: str = "", *, chat_text: str | None = None, notify: bool = True
    ) -> None:
        super().__init__(message or self.chat_text)
        if chat_text is not None:
            self.chat_text = chat_text
        self.notify = notify


class ContextTooLongError(UserFacingError):
    """The system prompt plus the newest message exceed the model's budget."""

    chat_text = "Your message is too long for this model. Please send something shorter."

    def __init__(self, message: str = "", *, needed: int = 0, budget: int = 0) -> None:
        super().__init__(message or f"newest turn needs {needed} tokens, budget is {budget}")
        self.needed = needed
        self.budget = budget


class MessageFolded(UserFacingError):
    """This message is answered by the turn of an earlier one of its burst
    (``bot.conversation.bursts``): a quiet refusal, nothing to post for it; an interaction that
    needs a response shows the chat text."""

    chat_text = "Answered together with your previous message."

    def __init__(self, message: str) -> None:
        super().__init__(message, notify=False)


class CatchupRefusedError(UserFacingError):
    """A catch-up that cannot be made: a span it does not take, a private chat, a conversation
    kept per person; ``chat_text`` says why and what works."""


class LLMError(UserFacingError):
    """The model call failed for good (after retries and fallbacks)."""

    chat_text = "The AI model could not answer right now."

    def __init__(
        self, message: str = "", *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class LLMBusyError(LLMError):
    chat_text = "The AI model is busy right now; please try again shortly."


class LLMQuotaError(LLMError):
    chat_text = "The LLM quota is exhausted (admins: check billing)."


class LLMAuthError(LLMError):
    chat_text = "LLM authentication failed (admins: check the API key)."


class LLMUnavailableError(LLMError):
    chat_text = "The LLM provider is unavailable right now; please try again later."


class LLMBadRequestError(LLMError):
    chat_text = "The LLM provider rejected this request."


class LLMContextLengthError(LLMBadRequestError):
    chat_text = ContextTooLongError.chat_text
