"""The docs cannot drift: the generated reference is current, config.yaml holds only real keys,
links resolve, and the plugin example runs in a fresh project set up as docs/plugins.md says."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import settings_from_mapping
from bot.config.reference import REFERENCE_PATH, REGENERATE, missing_descriptions, render, rows

ROOT = Path(__file__).resolve().parents[3]  # tests/product/app/ -> the project
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_configuration_reference_is_current() -> None:
    committed = REFERENCE_PATH.read_text(encoding="utf-8")
    assert committed == render(), f"docs/configuration-reference.md is stale; run: {REGENERATE}"


def test_every_config_field_has_a_description() -> None:
    assert missing_descriptions() == []


def test_reference_check_command_fails_on_a_stale_file(tmp_path: Path) -> None:
    from bot.config.reference import main

    stale = tmp_path / "reference.md"
    stale.write_text("old\n", encoding="utf-8")
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert main(["--check", "--output", str(stale)]) == 0


def _valid_keys() -> set[str]:
    """Every key of the reference and every section on the way to one (``llm.retry``)."""
    keys = {row.key for _, table in rows() for row in table}
    return keys | {key.rsplit(".", n)[0] for key in keys for n in range(1, key.count(".") + 1)}


def _keys(node: Any, prefix: str = "") -> set[str]:
    """Dotted key paths of a parsed YAML tree; list items and free mappings are not walked."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            found.add(path)
            if prefix != "telegram.chats":
                found |= _keys(value, path)
    return found


def _config_yaml() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_config_yaml_keys_are_all_real_keys() -> None:
    from adapters.discord.settings import discord_settings
    from adapters.telegram.settings import telegram_settings

    data = _config_yaml()
    settings = settings_from_mapping(data)  # unknown keys are errors (extra="forbid")
    telegram_settings(settings)  # the adapters' sections are checked by their own models
    discord_settings(settings)
    unknown = _keys(data) - _valid_keys()
    assert unknown == set(), f"config.yaml has keys the reference lacks: {unknown}"


def test_config_yaml_says_it_shows_the_common_keys() -> None:
    header = (ROOT / "config.yaml").read_text(encoding="utf-8").split("\n\n")[0]
    assert "common keys" in header and "docs/configuration-reference.md" in header
    assert "every default" not in header  # it does not show every key, so it must not say so


def test_config_yaml_commented_keys_are_real_keys() -> None:
    """``# key: value`` lines are there to be uncommented: each must name a real key."""
    valid = _valid_keys()
    path: list[tuple[int, str]] = []
    wrong = []
    for line in (ROOT / "config.yaml").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(\s*)(#\s?)?(\s*)(-\s+)?([a-z_]+):(\s|$)", line)
        if not match or (match.group(2) is None and line.lstrip().startswith("#")):
            continue
        indent = len(match.group(1)) + len(match.group(3)) + len(match.group(4) or "")
        path = [(i, k) for i, k in path if i < indent]
        if match.group(4) and path:  # "- key:" starts an item of the list above
            path[-1] = (path[-1][0], path[-1][1].removesuffix("[]") + "[]")
        path.append((indent, match.group(5)))
        key = ".".join(k for _, k in path)
        named = key.startswith(("telegram.chats.", "knowledge.bases."))  # the user's own names
        if match.group(2) and not named and key not in valid:
            wrong.append(key)
    assert wrong == []


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    text = "\n".join(lines)
    assert "make run" in text and "make test" in text


def test_the_license_file_is_the_one_the_package_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert declared["project"]["license"] == "MIT"
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in license_text


def test_contributing_names_only_real_commands_and_files() -> None:
    """CONTRIBUTING.md's make targets, flags and paths exist: a newcomer runs them as written."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    named = set(re.findall(r"`make ([a-z-]+)", text))
    assert named and named <= targets, f"unknown make targets: {named - targets}"
    paths = set(
        re.findall(r"`(?:\.venv/bin/python (?:-m pytest )?)?((?:tests|docs|bot)/[\w/.]*)", text)
    )
    missing = sorted(p for p in paths if not (ROOT / p.split("::")[0]).exists())
    assert paths and not missing, f"CONTRIBUTING.md names missing paths: {missing}"
    assert "PARLOUR_TEST_PG_URL" in text and "TEST_JOBS" in text


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve()
        assert resolved.exists(), f"{page.name}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", resolved.read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{page.name}: no heading #{anchor} in {file}"


PLUGIN_PAGE = ROOT / "docs" / "plugins.md"
# docs/plugins.md's example project: ``<!-- plugin-project: PATH -->`` before a block is a file
# at PATH; ``install`` and ``run`` are the commands the page tells the reader to type
PROJECT_BLOCK = re.compile(r"<!-- plugin-project: (\S+) -->\n```\w+\n(.*?)```", re.DOTALL)
CHECKOUT = "/path/to/parlour"  # how the page's install line names the reader's checkout


def _project_blocks() -> dict[str, str]:
    return dict(PROJECT_BLOCK.findall(PLUGIN_PAGE.read_text(encoding="utf-8")))


def _write_project(folder: Path) -> dict[str, str]:
    """The page's files, where it says they go; returns its install and run commands."""
    blocks = _project_blocks()
    commands = {key: blocks.pop(key, "") for key in ("install", "run")}
    assert blocks, "docs/plugins.md lost its plugin-project blocks"
    for name, text in blocks.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return commands


def _shell_lines(block: str) -> list[list[str]]:
    lines = (shlex.split(line, comments=True) for line in block.splitlines())
    return [line for line in lines if line]


def _run_as_the_page_says(project: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """``pytest`` is this environment's console script (which, unlike ``python -m pytest``, does
    not put the working directory on sys.path), ``python`` its interpreter. PYTHONPATH names
    this checkout only so that the Parlour under test is the one imported, as if installed."""
    programs = {"pytest": str(Path(sys.executable).with_name("pytest")), "python": sys.executable}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PARLOUR"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [programs.get(command[0], command[0]), *command[1:]],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_plugin_install_line_installs_this_checkout_with_its_testing_extra() -> None:
    """Parlour is not on PyPI: the page's install line must name the checkout, not a bare
    ``parlour`` that pip would look up on the index."""
    [install] = _shell_lines(_project_blocks().get("install", ""))
    assert install[:3] == ["pip", "install", "-e"], install
    path, _, extras = install[3].partition("[")
    assert path == CHECKOUT, f"{install[3]}: not a checkout's folder"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "parlour"
    assert extras.rstrip("]").split(",") == ["testing"]
    assert "testing" in project["optional-dependencies"]
    # "parlour[testing] @ git+..." names where to get it; a bare "parlour[testing]" does not
    bare = re.compile(r"pip install [\"']?parlour(\[\w+\])?(?![\[\w])[\"']?(?! @)")
    for page in PAGES:  # and no page still tells the reader to fetch it from the index
        assert not bare.search(page.read_text(encoding="utf-8")), page


@pytest.mark.slow
@pytest.mark.parametrize("how", ["as written", "python -m pytest"])
def test_plugin_example_runs_in_a_fresh_project(tmp_path: Path, how: str) -> None:
    """docs/plugins.md's dice plugin and its tests, in a project laid out as the page says, run
    with the page's command from that folder (and with ``python -m pytest``, which it says
    runs the same)."""
    commands = _write_project(tmp_path)
    [run] = _shell_lines(commands["run"])
    assert run == ["pytest"], "the page's run command changed: update this test"
    done = _run_as_the_page_says(tmp_path, run if how == "as written" else how.split())
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert re.search(r"\b2 passed in ", output), output
    assert "warning" not in output.lower(), output


@pytest.mark.slow
def test_a_plugin_that_fails_to_import_fails_the_test_with_its_error(tmp_path: Path) -> None:
    """The page's tests with a plugin whose own import fails: the test fails with the
    ModuleNotFoundError as its error, not with an assertion on the bot's apology."""
    commands = _write_project(tmp_path)
    plugin = tmp_path / "dice.py"
    plugin.write_text("import dice_helpers  # not installed\n" + plugin.read_text("utf-8"))
    done = _run_as_the_page_says(tmp_path, _shell_lines(commands["run"])[0])
    output = done.stdout + done.stderr
    assert done.returncode == 1 and re.search(r"\b2 failed in ", output), output
    # pytest's "E " lines are each failure's error (a log line would start "ERROR")
    errors = [line for line in output.splitlines() if line.startswith("E ")]
    assert any("ModuleNotFoundError: No module named 'dice_helpers'" in e for e in errors), output
    assert not any("Sorry" in line for line in errors), output
