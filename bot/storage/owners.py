"""Which process a pending row belongs to, and whether that process is gone.

A turn (or a reply being delivered) is tagged with the store instance that wrote it:
``host:pid:random``. After a kill -9 the next process can then close what the dead one left
at once, instead of waiting until it is old enough (``STALE_PENDING_SECONDS``,
:mod:`bot.storage.maintenance`), while a live neighbour sharing the database (the console next
to the bot, ``history export``) keeps its own.

An owner is *dead* only when that is certain: same host, and either our own pid under another
instance (a container restarts as pid 1 every time) that is no longer open in this process, or
a pid that no longer exists. Anything else (another host, a pid we may not signal, a reused pid)
counts as alive, and the age rule closes it later.
"""

from __future__ import annotations

import os
import secrets
import socket

_live: set[str] = set()  # store instances open in this process


def new_owner() -> str:
    """A fresh instance id; :func:`register` it while the store is open."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def register(owner: str) -> None:
    _live.add(owner)


def unregister(owner: str) -> None:
    _live.discard(owner)


def is_dead(owner: str) -> bool:
    """True when the process that wrote ``owner`` has certainly exited (see the module doc)."""
    if owner in _live:
        return False
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return True  # an earlier instance of this pid, no longer open here
    if os.name != "posix":
        return False  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists, under another user
        return False
    return False
