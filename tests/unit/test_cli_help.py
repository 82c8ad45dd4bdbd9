"""Every command's `--help` renders, and a flag shows no `<bool>` value (it takes none)."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from cli.main import app


def command_paths() -> list[list[str]]:
    """Every command of `mneme`, as the words that name it."""
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):  # a group (typer 0.29 has its own click)
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
        else:
            paths.append(path)

    walk(typer.main.get_command(app), [])
    return paths


def test_no_command_help_shows_a_bool_value() -> None:
    paths = command_paths()
    assert ["demo"] in paths and ["keys", "add"] in paths and len(paths) > 25
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
        assert result.exit_code == 0, (path, result.output)
        assert "--help" in result.output
        assert "<bool>" not in result.output, (path, result.output)
