"""`mneme consolidate` on a real embedded store, as a user would run it: clear errors for a bad
level or time, then a deep run along a simulated clock that forgets nothing knowledge rests on;
a clear stop (exit 2) while another process consolidates the same user."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from memory.schema import utcnow
from memory.sleep.leases import CONSOLIDATION
from memory.stores.sqlite import SqliteGraphStore
from tests.integration.test_cli_knowledge import DATA, cli, data_dir

__all__ = ["data_dir"]


async def test_consolidate_checks_its_input_and_sleeps(data_dir: Path, tmp_path: Path) -> None:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation.pop("questions", None)
    path = tmp_path / "nora.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", "nora")
    assert code == 0, out

    code, out = await cli("consolidate", "--user", "nora", "--level", "weekly")
    assert code == 2 and "unknown consolidation level 'weekly'" in out
    code, out = await cli("consolidate", "--user", "nora", "--now", "soon")
    assert code == 2 and "not an ISO 8601 time" in out
    code, out = await cli("consolidate", "--user", "nora", "--now", "2000-01-01")
    assert code == 2 and "before 'nora''s newest memory" in out

    code, facts_before = await cli("facts", "--user", "nora", "--json")
    assert code == 0
    current = {f["uid"] for f in json.loads(facts_before)}
    code, out = await cli(
        "consolidate", "--user", "nora", "--level", "deep", "--now", "2030-01-01", "--json"
    )
    assert code == 0, out
    report = json.loads(out)
    assert report["level"] == "deep" and report["rescored"] > 0
    code, facts_after = await cli("facts", "--user", "nora", "--json")
    after = {f["uid"]: f for f in json.loads(facts_after)}
    assert set(after) == current  # every current fact kept, each with a source
    assert all(f["sources"] for f in after.values())
    code, out = await cli("doctor")
    assert "episodes without vectors: 0" in out and "vectors without episodes: 0" in out
    code, out = await cli("consolidate", "--user", "nora", "--level", "deep", "--now", "2030-01-02")
    assert code == 0 and "0 pinned" in out and "0 forgotten" in out  # the deep run did it all
    assert f"apperception {report['apperception']}" in out  # nothing changed since
    assert f"goals {report['goals']}: no status changed" in out


async def test_consolidate_stops_while_another_process_consolidates(
    data_dir: Path, tmp_path: Path
) -> None:
    for user in ("nora", "sam"):
        code, out = await cli("ingest", str(_one_session(tmp_path)), "--user", user)
        assert code == 0, out
    # Another process (a server's schedule) holds nora's lease in the same graph file.
    other = SqliteGraphStore(data_dir / "graph.sqlite3")
    try:
        await other.leases.take("nora", CONSOLIDATION, "server pid 1", utcnow(), timedelta(hours=1))
        code, out = await cli("consolidate", "--user", "nora")
        assert code == 2, out
        assert "consolidation of 'nora' is running in another process" in out
        assert "try again when it has finished" in out
        code, out = await cli("consolidate", "--user", "sam")  # another user is not held up
        assert code == 0, out
        assert await other.leases.release("nora", CONSOLIDATION, "server pid 1")
    finally:
        await other.close()
    code, out = await cli("consolidate", "--user", "nora")
    assert code == 0 and "nora at" in out, out


def _one_session(tmp_path: Path) -> Path:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation["sessions"] = conversation["sessions"][:1]
    conversation.pop("questions", None)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    return path
