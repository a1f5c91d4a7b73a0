"""Can the bot write the SQLite file and its two companions? Asked before opening it.

SQLite in WAL mode keeps the WAL index in ``<db>-shm`` and maps that file into memory. If the
file turns immutable (``chattr +i``) while mapped, the kernel answers the next write to the
mapping with SIGBUS and the process dies on the spot, in SQLite's C code, with no reply and no
log line: nothing in Python can catch it. (An immutable ``.db`` or ``-wal`` only makes SQLite's
writes fail, which the bot survives.) The one way around the mapping, exclusive locking, would
shut the ``history`` commands, ``sqlite3 .backup`` and a second process out of the file while
the bot runs, so the bot keeps the mapping and instead refuses to start, and ``doctor`` fails,
while any of the files is immutable, append-only or not writable: a restarted bot says why.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

__all__ = ["FIX", "unwritable", "unwritable_text"]

# FS_IOC_GETFLAGS is _IOR('f', 1, long): its number carries sizeof(long); the kernel writes an int
_GETFLAGS = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
_FLAGS = ((0x10, "immutable (chattr +i)"), (0x20, "append-only (chattr +a)"))
FIX = (
    "let the bot's user write the database, its -wal and -shm and their directory "
    "(lsattr shows the attributes; chattr -i / chattr -a clears them)"
)


def unwritable(database: Path) -> list[str]:
    """What keeps the bot from writing ``database``, its ``-wal``, its ``-shm`` or their
    directory (which must take the companions SQLite creates): one sentence each, none if
    nothing does. Files that do not exist yet are fine."""
    if str(database) == ":memory:":
        return []
    problems: list[str] = []
    directory = database.parent
    if directory.is_dir():
        problems += [f"the directory {directory} is {why}" for why in _attributes(directory)]
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        if not path.exists():
            continue
        attributes = [f"{path} is {why}" for why in _attributes(path)]
        if not attributes and not os.access(path, os.W_OK):  # (an attribute denies it too)
            attributes.append(f"{path} is not writable by this user")
        problems += attributes
    return problems


def unwritable_text(problems: list[str]) -> str:
    """Start-up's refusal: what is wrong, why it is fatal, the fix."""
    return (
        f"{'; '.join(problems)}. SQLite must write all of them (and a -shm that turns read-only "
        f"while mapped kills the process with SIGBUS), so the bot does not start: {FIX}"
    )


def _attributes(path: Path) -> list[str]:
    """The file attributes (``lsattr``) that forbid writing; none where the file system has
    no such attributes (the ioctl is Linux's; elsewhere, or on tmpfs before 6.0, it fails)."""
    if sys.platform != "linux":
        return []
    import fcntl  # not on Windows

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        raw = fcntl.ioctl(fd, _GETFLAGS, bytes(8))
    except OSError:
        return []
    finally:
        os.close(fd)
    (flags,) = struct.unpack("=i", raw[:4])
    return [why for bit, why in _FLAGS if flags & bit]
