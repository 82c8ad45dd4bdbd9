"""The memories table of `mneme chat --memories` (and `mneme recall`) lists memories best first:
by rank, whatever order the state holds them in (a question about order keeps them oldest
first for the reply)."""

from __future__ import annotations

from datetime import UTC, datetime

from cli.agent_commands import memories_table
from cli.common import console


def test_rows_are_in_rank_order() -> None:
    memories = [
        {
            "rank": rank,
            "content": f"memory ranked {rank}",
            "created_at": f"2026-0{rank}-01T10:00:00+00:00",
            "thread_id": "t",
            "score": 1 / rank,
            "episode_uid": f"e{rank}",
        }
        for rank in (3, 1, 2)
    ]
    with console.capture() as out:
        console.print(memories_table(memories, datetime(2026, 6, 1, tzinfo=UTC)))
    text = out.get()
    positions = [text.index(f"memory ranked {rank}") for rank in (1, 2, 3)]
    assert positions == sorted(positions), text
