"""`mneme concepts` and `mneme diary` on a real embedded store, after a daily sleep run by
`mneme consolidate`: what the user reads, and a clear error for a bad day."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_cli_knowledge import DATA, cli, data_dir

__all__ = ["data_dir"]


async def test_diary_and_concepts_after_daily_sleep(data_dir: Path, tmp_path: Path) -> None:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation.pop("questions", None)
    path = tmp_path / "nora.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    assert (await cli("ingest", str(path), "--user", "nora"))[0] == 0

    code, out = await cli("diary", "--user", "nora")
    assert code == 0 and "no diary entries" in out
    code, out = await cli(
        "consolidate", "--user", "nora", "--level", "daily", "--now", "2030-01-01"
    )
    assert code == 0 and "diary:" in out, out

    code, out = await cli("diary", "--user", "nora", "--json")
    assert code == 0, out
    entries = json.loads(out)
    assert entries and [e["day"] for e in entries] == sorted(e["day"] for e in entries)
    assert all(e["text"].split(".")[0].endswith(e["day"][:4]) for e in entries)
    first = entries[0]["day"]
    code, out = await cli("diary", "--user", "nora", "--day", first, "--json")
    assert code == 0 and [e["day"] for e in json.loads(out)] == [first]
    code, out = await cli("diary", "--user", "nora", "--day", "tuesday")
    assert code == 2 and "'tuesday' is not a day" in out
    code, out = await cli("diary", "--user", "someone-else", "--json")
    assert code == 0 and json.loads(out) == []

    code, out = await cli("concepts", "--user", "nora", "--json")
    assert code == 0, out
    for concept in json.loads(out):
        assert concept["day_count"] >= 3 and len(concept["episodes"]) == concept["episode_count"]
