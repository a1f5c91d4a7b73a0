"""``python -m bench.fake_child``: the test kit's fake LLM served in a child process, optionally
without its prompt-cache emulation.

The out-of-process floor (:mod:`bench.floor`) compares turns with replays of their own requests.
With the emulation on, the fake's work differs between the two: a live turn's prompt is new, so
the fake runs the tokenizer over the part shared with the previous prompt (about 1 ms for a
prefix-stable window of 60 messages), while a replayed prompt was counted before and is found in
the token cache. That would be charged to the bot. Off, the fake does the same work for both.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from bot.testing.fake_llm import FakeLLM


async def _serve(fake: FakeLLM) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await fake.start("127.0.0.1", 0)
    try:
        sys.stdout.write(f"OPENAI_BASE_URL={fake.base_url}\n")  # what fake_in_child reads
        sys.stdout.flush()
        await done.wait()
    finally:
        await fake.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fake_child", description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--no-prompt-cache", action="store_true")
    args = parser.parse_args(argv)
    fake = FakeLLM(latency=args.latency)
    fake.prompt_cache = not args.no_prompt_cache
    asyncio.run(_serve(fake))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
