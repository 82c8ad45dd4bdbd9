"""The SQLite store reads listed rows by their key, never by walking the tenant's index.

Without statistics, SQLite's planner prefers an index on `tenant` over the primary key when a
query says `tenant = ? AND uid IN (SELECT value FROM json_each(?))`: it then reads every row of
the tenant to keep the listed ones. That made the thread adjacency of a retrieval cost 6 ms at
5,000 episodes, and grows with the tenant. The queries keep the tenant filter (as `+tenant`,
which the planner cannot use as an index), so the listed keys drive the search. This test
captures every statement the list-taking reads and writes run on a real store and checks each
plan.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import timedelta
from pathlib import Path

from memory.schema import EpisodeStatus, NewEpisode, utcnow
from memory.stores.sqlite import SqliteGraphStore

TENANT_SCAN = re.compile(r"USING (?:COVERING )?INDEX \w+ \((?:\w+\.)?tenant=\?\)$")
"""A plan step that searches an index by the tenant alone: every row of the tenant."""
PAIR_PROBE = re.compile(r"\(src=\? AND dst=\?\)")
"""A plan step that probes the chain once per pair of listed episodes (n² for n listed)."""


async def test_list_reads_search_by_key_not_by_tenant(tmp_path: Path) -> None:
    store = SqliteGraphStore(tmp_path / "graph.sqlite3")
    await store.setup()
    try:
        start = utcnow() - timedelta(days=3)
        uids: list[str] = []
        for tenant in ("alice", "bob"):
            for i in range(30):
                created = await store.episodes.create(
                    NewEpisode(
                        tenant=tenant,
                        thread_id="t1",
                        user_text=f"turn {i} about the garden",
                        agent_text="noted",
                        created_at=start + timedelta(minutes=i),
                        status=EpisodeStatus.PROCESSED,
                    )
                )
                if tenant == "alice":
                    uids.append(created.uid)
        statements: list[str] = []

        def trace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(statements.append)

        await store._run(trace)
        some = uids[:12]
        await store.episodes.get_many("alice", some)
        await store.episodes.thread_links("alice", some)
        await store.episodes.neighbours_many("alice", some[:5], 2)
        await store.facts.get_many("alice", ["f1", "f2"])
        await store.features.get_many("alice", ["x1"])
        await store.summaries.get_many("alice", ["s1"])
        await store.episodes.connections("alice", some)
        await store.episodes.sole_evidence("alice", some)
        await store.episodes.record_access("alice", some[:4], utcnow())

        def untrace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(None)

        await store._run(untrace)
        listed = [s for s in statements if "json_each" in s]
        assert len(listed) >= 9, statements  # every call above ran a list query

        def plan(conn: sqlite3.Connection, sql: str) -> list[str]:
            return [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]

        for sql in listed:
            steps = await store._run(plan, sql)
            scans = [step for step in steps if TENANT_SCAN.search(step) or PAIR_PROBE.search(step)]
            assert not scans, f"{sql}\n-> {steps}"
        # and the tenant filter is still applied: bob's uids are not alice's
        assert await store.episodes.get_many("bob", some) == []
    finally:
        await store.close()
