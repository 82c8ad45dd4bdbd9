"""Misspelled `MNEME_*` variables are flagged with the closest valid name (at the CLI's start,
the server's start and in `mneme doctor`), and the list of valid names is complete: every
`MNEME_*` name the code, the tools and the docs use is one."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from memory.variables import known_variables, unknown_variables

ROOT = Path(__file__).resolve().parents[2]


def test_a_misspelled_setting_names_the_closest_one(tmp_path: Path) -> None:
    env = {"MNEME_EMBEDING_MODEL": "x", "MNEME_DATA_DIR": "/d", "mneme_llm_base_url": "u"}
    (tmp_path / ".env").write_text("MNEME_SLEEP_SCHEDUEL=true\nMNEME_FROBNICATE=1\n")
    assert unknown_variables(env, tmp_path / ".env") == [
        "MNEME_EMBEDING_MODEL is not a mneme setting and is ignored; did you mean "
        "MNEME_EMBEDDING_MODEL?",
        "MNEME_FROBNICATE is not a mneme setting and is ignored; see .env.example for the settings",
        "MNEME_SLEEP_SCHEDUEL is not a mneme setting and is ignored; did you mean "
        "MNEME_SLEEP_SCHEDULE?",
    ]
    assert unknown_variables({"MNEME_DATA_DIR": "/d", "PATH": "/bin"}, None) == []


def test_every_mneme_variable_in_the_repository_is_known() -> None:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    used: set[str] = set()
    for name in files:
        path = ROOT / name
        if path.name == Path(__file__).name:
            continue  # this file's misspellings are on purpose
        if path.suffix in {".py", ".sh", ".md", ".yml", ".example", ".ipynb"} or path.name in {
            "Makefile",
            "run",
        }:
            used |= set(re.findall(r"\bMNEME_[A-Z0-9_]*[A-Z0-9]\b", path.read_text("utf-8")))
    assert used - known_variables() == set()


def test_the_cli_warns_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEME_CONECT_TIMEOUT_S", "5")
    result = CliRunner().invoke(app, ["keys", "add", "--user", "u", "--file", "k"])
    assert result.exit_code == 0
    assert "did you mean MNEME_CONNECT_TIMEOUT_S?" in result.output
