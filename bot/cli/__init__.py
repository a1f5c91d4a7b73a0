"""The command line, one idea per module: :mod:`.parser` is its grammar (standard library only,
so ``--help`` is instant); :mod:`.commands` parses ``python -m bot [--config FILE] COMMAND`` and
runs it, importing what that command needs; :mod:`.serve` runs the app for ``run`` and ``chat``;
:mod:`.adapters` finds and creates the adapters ``run`` starts; :mod:`.collector` pauses the
garbage collector while ``run`` and ``chat`` import what they serve with;
:mod:`.history` is ``history``'s export, audit and erasure; :mod:`.progress` the progress bar
and count tables of ``storage copy``. ``main`` is the ``parlour`` script's entry point.
"""

from __future__ import annotations

from bot.cli.commands import main

__all__ = ["main"]
