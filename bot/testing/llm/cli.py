"""``python -m bot.testing.fake_llm``: serve a ``FakeLLM`` until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from bot.testing.llm.server import FakeLLM
from bot.testing.service import run_cli


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.testing.fake_llm``: serve until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m bot.testing.fake_llm",
        description=(
            "Fake OpenAI-compatible chat server. It echoes the last user message, unless the "
            'message holds [[tool:NAME {"arg": ...}]] (call that tool, then quote its result) '
            "or [[context]] (show what the model was sent)."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per completion")
    parser.add_argument("--context-window", type=int, default=128_000, metavar="N")
    parser.add_argument("--api-key", default=None, help="require this key (default: any)")
    parser.add_argument(
        "--ignore-max-tokens", action="store_true", help="answer in full, past max_tokens"
    )
    parser.add_argument(
        "--reveal",
        action="store_true",
        help="answer every message with what the model was sent, as [[context]] does",
    )
    args = parser.parse_args(argv)
    fake = FakeLLM(
        model_context_window=args.context_window,
        api_key=args.api_key,
        latency=args.latency,
        ignore_max_tokens=args.ignore_max_tokens,
        reveal=args.reveal,
    )
    return run_cli(_serve(fake, args.host, args.port), "fake_llm", args.host, args.port)


async def _serve(fake: FakeLLM, host: str, port: int) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await fake.start(host, port)
    try:
        sys.stdout.write(f"OPENAI_BASE_URL={fake.base_url}\n")
        sys.stdout.flush()
        await done.wait()
    finally:
        await fake.stop()
