"""`mneme ingest` checks the whole file, then writes (issue 29, items 5 and 7), on the embedded
store the CLI opens from the environment (SQLite: the CLI's own default; the checks run before
any store is opened, so no backend is involved in a refusal).

A bad line anywhere (a session dated in the future, a turn over `MNEME_MAX_MESSAGE_BYTES`, a
conversation id that makes the thread id too long) stops it with exit 2 and one line naming
where, and nothing is written; before, the conversations before the bad line were written and
the bad one ended in a traceback. A binary file and a 100,000-deep JSON line give one line and
exit 2 from the real command, no traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory.stores.sqlite import SqliteGraphStore
from tests.integration.test_cli_knowledge import cli, data_dir

__all__ = ["data_dir"]

ROOT = Path(__file__).resolve().parents[2]


def _conversation(cid: str, date: str | None = "2024-05-01T10:00:00", text: str = "") -> str:
    turns = [
        {"id": "1", "speaker": "nora", "role": "user", "text": text or f"I live in Lyon ({cid})."},
        {"id": "2", "speaker": "bot", "role": "assistant", "text": "Noted."},
    ]
    return json.dumps({"id": cid, "sessions": [{"id": "s1", "date": date, "turns": turns}]})


BAD_LINES: dict[str, tuple[str, str]] = {
    "future date": (
        _conversation("c2", date="9999-12-31T23:59:59"),
        "session 1 date 9999-12-31T23:59:59+00:00 is in the future",
    ),
    "oversized turn": (
        _conversation("c2", text="x" * 300_000),
        "conversation 2, session 1, episode 1: user_text is 300,000 bytes",
    ),
    "long conversation id": (
        _conversation("c" * 600),
        "conversation 2, session 1, episode 1: thread_id is 603 characters",
    ),
}


async def _episodes(data: Path, user: str) -> int:
    if not (data / "graph.sqlite3").exists():
        return 0
    store = SqliteGraphStore(data / "graph.sqlite3")
    try:
        return await store.episodes.count(user)
    finally:
        await store.close()


@pytest.mark.parametrize("case", BAD_LINES.values(), ids=list(BAD_LINES))
async def test_ingest_with_one_bad_line_writes_nothing(
    data_dir: Path, tmp_path: Path, case: tuple[str, str]
) -> None:
    line, message = case
    path = tmp_path / "nora.jsonl"
    path.write_text(_conversation("c1") + "\n" + line + "\n" + _conversation("c3") + "\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", "nora")
    assert await _episodes(data_dir, "nora") == 0, out  # not c1 either
    assert code == 2, out
    assert message in " ".join(out.split()) and "nothing was ingested" in out, out

    path.write_text(_conversation("c1") + "\n" + _conversation("c3") + "\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", "nora")
    assert code == 0 and await _episodes(data_dir, "nora") == 2, out


def _run_ingest(path: Path, env: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", str(path), "--user", "nora"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


async def test_a_binary_or_deeply_nested_file_is_one_line_and_exit_2(
    data_dir: Path, tmp_path: Path
) -> None:
    binary = tmp_path / "photo.jsonl"
    binary.write_bytes(bytes(range(256)) * 64)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    for path, message in (
        (binary, "is not UTF-8 text after line 0 (a binary file?)"),
        (deep, ":1 is nested too deeply to be a conversation"),
    ):
        done = await asyncio.to_thread(_run_ingest, path, env)
        lines = (done.stdout + done.stderr).strip().splitlines()
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and len(lines) == 1, lines
        assert message in lines[0] and "nothing was ingested" in lines[0], lines
    assert await _episodes(data_dir, "nora") == 0
