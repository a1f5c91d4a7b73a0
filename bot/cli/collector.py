"""``run`` and ``chat`` start with the cyclic garbage collector paused (issue 31).

Importing the libraries a bot serves with (aiogram, the OpenAI SDK, pydantic) makes some
300,000 long-lived objects, and while they are made the collector keeps walking them: about a
fifth of the CPU time of a start, for some 2,000 objects of garbage (about 0.5 MiB). So the
collector is off from the command line's start until the imports are done (:func:`pause`);
then what they made is frozen out of every later collection (``gc.freeze``: modules, classes
and schemas live as long as the process anyway) and the collector is on again (:func:`settle`).
Later collections then walk only what the running bot makes, so they stay short under load too.
And they come less often (:data:`THRESHOLDS`): with CPython's default the youngest generation is
collected every 700 allocations, some 250 times in a burst of 200 turns, and each walks the
turns still running (live, so they survive into older generations that are walked again): about
0.2 s of a 1.5 s burst on the 2-core machine. Every 10,000 it is about 14 times and 0.05 s
(bench section 13). Garbage in cycles waits a little longer for its collection; an idle bot
allocates little, and nothing else depends on when it runs.
:func:`resume` turns it back on if the command ends before it settled (an error at start).
Only a process of its own does this (``main()`` reading ``sys.argv``): a test that calls
``main(argv)`` in its own process keeps its collector as it was.
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "pause", "resume", "serving", "settle"]

THRESHOLDS = (10_000, 20, 20)  # gc.set_threshold while serving (CPython's: 700, 10, 10)

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
        serving()
        gc.enable()


def serving() -> None:
    """The collector as a serving bot has it: what exists now frozen out of its walks, and the
    thresholds above (the bench's bursts set their process up the same way)."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


def resume() -> None:
    """Collector on again, as it was, without freezing anything (idempotent)."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
