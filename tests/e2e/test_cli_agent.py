"""The agent's CLI end to end in a subprocess: `mneme demo`, `mneme recall`, `mneme chat`."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import BIN, ROOT, child_env

pytestmark = pytest.mark.slow


def mneme(
    args: list[str], data: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "mneme"), *args],
        cwd=ROOT,
        env=child_env(data, COLUMNS="120"),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_demo_recall_and_chat(tmp_path: Path) -> None:
    data = tmp_path / "data"
    demo = mneme(["demo", "--usage"], data)
    assert demo.returncode == 0, demo.stderr
    assert "12 turns in 4 conversations (12 new" in demo.stdout
    done = re.search(
        r"(\d)/7 questions answered from memory; (\d)/7 with the right memory first", demo.stdout
    )
    assert done is not None, demo.stdout
    assert (done.group(1), done.group(2)) == ("7", "7"), demo.stdout
    assert "On 20 October" not in demo.stdout or "you told me" in demo.stdout
    again = mneme(["demo"], data)  # a second run remembers nothing twice
    assert "12 turns in 4 conversations (0 new, 12 already remembered)" in again.stdout
    assert "session-1" in demo.stdout and "LLM calls 0" in demo.stdout

    recall = mneme(["recall", "octopus book", "--user", "demo", "--n", "3"], data)
    assert recall.returncode == 0, recall.stderr
    assert "Soul of an Octopus" in recall.stdout and "session-4" in recall.stdout

    chat = mneme(
        ["chat", "--user", "demo", "--memories"],
        data,
        stdin="/help\n/bogus\nWhat is my dog afraid of?\n/quit\n",
    )
    assert chat.returncode == 0, chat.stderr
    assert "vacuum" in chat.stdout
    assert "Commands: /help" in chat.stdout and "unknown command /bogus" in chat.stdout
    with sqlite3.connect(data / "graph.sqlite3") as db:  # commands are not memories
        stored = [r[0] for r in db.execute("SELECT user_text FROM episodes WHERE tenant = 'demo'")]
    assert "What is my dog afraid of?" in stored
    assert not [t for t in stored if t.startswith("/")]

    bad = mneme(["recall", "x", "--recipe", "FANCY"], data)
    assert bad.returncode != 0 and "unknown retrieval recipe" in bad.stderr
    bad_user = mneme(["chat", "--user", " "], data, stdin="/quit\n")
    shown = " ".join(bad_user.stderr.replace("\u2502", " ").split())  # rich's box unwrapped
    assert bad_user.returncode == 2 and "--user" in shown and "whitespace" in shown, shown
