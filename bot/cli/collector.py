"""``run`` and ``chat`` start with the cyclic garbage collector paused (issue 31).

Importing the libraries a bot serves with (aiogram, the OpenAI SDK, pydantic) makes some
300,000 long-lived objects, and while they are made the collector keeps walking them: about a
fifth of the CPU time of a start, for some 2,000 objects of garbage (about 0.5 MiB). So the
collector is off from the command line's start until the imports are done (:func:`pause`);
then what they made is frozen out of every later collection (``gc.freeze``: modules, classes
and schemas live as long as the process anyway) and the collector is on again (:func:`settle`).
Later collections then walk only what the running bot makes, so they stay short under load too.
:func:`resume` turns it back on if the command ends before it settled (an error at start).
Only a process of its own does this (``main()`` reading ``sys.argv``): a test that calls
``main(argv)`` in its own process keeps its collector as it was.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume", "settle"]

_paused = False


def pause() -> None:
    """Collector off (if it was on) until :func:`settle` or :func:`resume`."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def settle() -> None:
    """The imports are done: freeze what exists out of later collections, collector on."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def resume() -> None:
    """Collector on again, as it was, without freezing anything (idempotent)."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
