"""The OpenAI-compatible chat endpoint: :mod:`.api` (the routes), :mod:`.wire` (a request read as
OpenAI validates it, and the pieces of the answers), :mod:`.stream` (server-sent events),
:mod:`.once` (a non-streamed answer stored as what the client was given), :mod:`.errors`
(refusals in OpenAI's error shape).
"""
