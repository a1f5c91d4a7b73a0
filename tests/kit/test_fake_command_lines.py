"""The fakes' command lines (``python -m bot.testing.fake_llm`` and the others), as a plugin
author starts them beside a bot."""

from __future__ import annotations

import importlib
import socket

import pytest


@pytest.mark.parametrize("fake", ["fake_llm", "fake_telegram", "fake_discord"])
def test_a_fakes_command_line_on_a_taken_port_says_so_in_one_line(
    fake: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main = importlib.import_module(f"bot.testing.{fake}").main
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--port", str(port)]) == 1
    said = capsys.readouterr().err
    taken_port = "the port is taken (is one running already?)"
    assert said == f"{fake}: cannot listen on 127.0.0.1:{port}: {taken_port}\n"


def test_two_bots_of_one_name_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.testing.fake_discord import main

    with pytest.raises(SystemExit) as stopped:
        main(["--port", "0", "--bot", "quiz=T2", "--bot", "quiz=T3"])
    assert stopped.value.code == 2
    assert "--bot quiz: that name is taken" in capsys.readouterr().err
