"""What a command module needs of argparse's sub-command table (its class is private)."""

from __future__ import annotations

import argparse
from typing import Any, Protocol

__all__ = ["SubCommands"]


class SubCommands(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...
