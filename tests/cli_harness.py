"""The command line for tests: ``bot.cli.main(argv)`` in this process, as ``python -m bot`` runs.

A real ``python -m bot`` costs an interpreter start and every import (2–4 s on a busy 2-core
machine). What most CLI tests check — exit status, what is printed, what is stored — needs no
process of its own, so :func:`run_main` gives ``main`` what a fresh process would have and puts
it back afterwards: its own environment, working directory, stdin/stdout/stderr, root logger and
logger levels, ``sys.path``, and no module imported from the working directory left behind. It
runs on a thread of its own (``main`` calls ``asyncio.run``) while the test's loop keeps serving
the fakes. Like a process it turns ``SystemExit`` into a status and an uncaught exception into a
traceback on stderr and status 1, and, as a process would hang at exit, it fails when ``main``
leaves a non-daemon thread running.

What only a process shows — start-up through the interpreter, signals, kill -9, replicas, the
``parlour`` script's import path — stays with :func:`run_process`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.waits import STARTUP

ROOT = Path(__file__).resolve().parents[1]
_one_at_a_time = threading.Lock()  # main() owns the process-wide state while it runs


async def run_main(
    *args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> tuple[int, str, str]:
    """``main(args)`` in this process: (exit status, stdout, stderr)."""
    return await asyncio.to_thread(_run_main, list(args), env, stdin, cwd)


async def run_process(
    *args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None, program: str = ""
) -> tuple[int, str, str]:
    """A real ``python -m bot`` (or ``program``) process: (exit status, stdout, stderr)."""
    command = [program] if program else [sys.executable, "-m", "bot"]
    proc = await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout=STARTUP)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _run_main(
    argv: Sequence[str], env: dict[str, str], stdin: str, cwd: Path | None
) -> tuple[int, str, str]:
    from bot.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _one_at_a_time, _as_a_fresh_process(env, cwd, io.StringIO(stdin), out, err):
        before = set(threading.enumerate())
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's --help and usage errors, as the interpreter does
            code = _exit_status(exc.code, err)
        except BaseException:
            traceback.print_exc(file=err)
            code = 1
        left = [t for t in threading.enumerate() if t not in before and _would_hold_exit(t)]
        for thread in left:
            thread.join(timeout=5)
    hanging = [t.name for t in left if t.is_alive()]
    assert not hanging, f"{argv}: a process would not exit, threads still running: {hanging}"
    return code, out.getvalue(), err.getvalue()


def _would_hold_exit(thread: threading.Thread) -> bool:
    """A non-daemon thread keeps a process from exiting; the test loop's own executor threads
    (``asyncio_N``, idle until that loop closes) are not ``main``'s: ``asyncio.run`` joins its
    executor before it returns."""
    return not thread.daemon and not thread.name.startswith("asyncio_")


def _exit_status(code: object, err: io.StringIO) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err.write(f"{code}\n")
    return 1


@contextlib.contextmanager
def _as_a_fresh_process(
    env: dict[str, str], cwd: Path | None, stdin: io.StringIO, out: io.StringIO, err: io.StringIO
) -> Iterator[None]:
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    saved_modules = set(sys.modules)
    root = logging.getLogger()
    saved_handlers, saved_root_level = list(root.handlers), root.level
    saved_levels = {
        name: logger.level
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    streams = sys.stdin, sys.stdout, sys.stderr
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    importlib.invalidate_caches()  # modules the test just wrote are found
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        root.handlers[:] = saved_handlers
        root.setLevel(saved_root_level)
        for name, logger in logging.Logger.manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                logger.setLevel(saved_levels.get(name, logging.NOTSET))
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if not _shipped(sys.modules[name]):
                del sys.modules[name]  # a plugin in the working directory: the next run's own


def _shipped(module: object) -> bool:
    """Part of the project or of an installed package (kept: importing them again would make
    second copies of their classes); anything else came from the test's working directory."""
    where = getattr(module, "__file__", None)
    if where is None:
        return True
    path = Path(where).resolve()
    return path.is_relative_to(ROOT) or any(
        path.is_relative_to(Path(prefix).resolve()) for prefix in {sys.prefix, sys.base_prefix}
    )


def run_on_terminal(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """A real ``python -m bot ARGS`` process whose stderr is a terminal (a pty): for what it
    draws there (a progress bar). Returns the exit status, stdout and what the terminal got."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bot", *args],
            stdout=subprocess.PIPE, stderr=follower, env=env, cwd=cwd, timeout=120, check=False,
        )  # fmt: skip
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    return done.returncode, done.stdout.decode(), drawn.decode()
