"""CI's lint step, `make lint` and the pre-commit hooks run the same checks: the commands of
tools/test.sh's lint lines, the Makefile's `lint` recipe and .pre-commit-config.yaml's entries."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHECKS = [".venv/bin/ruff check .", ".venv/bin/ruff format --check .", ".venv/bin/mypy"]


def test_ci_lint_step() -> None:
    lines = (ROOT / "tools" / "test.sh").read_text().splitlines()
    found = [line.split(" || ")[0] for line in lines if re.match(r"\.venv/bin/(ruff|mypy)", line)]
    assert found == CHECKS


def test_make_lint() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe is not None
    found = [line.strip().replace("$(BIN)/", ".venv/bin/") for line in recipe[1].splitlines()]
    assert found == CHECKS


def test_pre_commit_hooks() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert all(repo["repo"] == "local" for repo in config["repos"])
    assert [hook["entry"] for hook in hooks] == CHECKS
    assert all(hook["pass_filenames"] is False for hook in hooks)  # the whole tree, as CI
