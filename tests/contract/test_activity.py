"""recent_activity: the newest episodes' times, oldest first, read from an index on each backend."""

from __future__ import annotations

import os
import sqlite3

import pytest

from memory.stores.base import GraphStore

from ._support import at, new_episode


async def test_recent_activity_is_the_newest_oldest_first(graph: GraphStore) -> None:
    assert await graph.episodes.recent_activity("t1", 5) == []
    for minute in [30, 10, 50, 20, 40]:
        await graph.episodes.create(new_episode("t1", f"at {minute}", minute, uid=f"e{minute}"))
    await graph.episodes.create(new_episode("t1", "same instant", 50, uid="e50b"))
    await graph.episodes.create(new_episode("t2", "someone else", 99, uid="other"))

    assert await graph.episodes.recent_activity("t1", 3) == [at(40), at(50), at(50)]
    assert await graph.episodes.recent_activity("t1", 1) == [at(50)]
    everything = [at(10), at(20), at(30), at(40), at(50), at(50)]
    assert await graph.episodes.recent_activity("t1", 100) == everything
    assert await graph.episodes.recent_activity("t2", 100) == [at(99)]
    assert await graph.episodes.recent_activity("t1", 0) == []
    assert all(t.utcoffset() is not None for t in await graph.episodes.recent_activity("t1", 3))
    with pytest.raises(ValueError):
        await graph.episodes.recent_activity("t1", -1)

    await graph.episodes.delete("t1", "e50")
    await graph.episodes.delete("t1", "e50b")
    assert await graph.episodes.recent_activity("t1", 2) == [at(30), at(40)]


async def test_recent_activity_reads_an_index_not_the_table(graph: GraphStore) -> None:
    for minute in range(3):
        await graph.episodes.create(new_episode("t1", f"n{minute}", minute))
    if graph.backend == "sqlite":
        from memory.stores.sqlite.episodes import Q_RECENT

        conn = sqlite3.connect(graph.path)  # type: ignore[attr-defined]
        try:
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {Q_RECENT}", ("t1", 2))]
        finally:
            conn.close()
        # One index search, in index order: no table scan and no sort.
        assert plan == ["SEARCH episodes USING COVERING INDEX episodes_tenant_time (tenant=?)"]
        return

    import neo4j

    from memory.stores.neo4j.episodes import Q_RECENT as CYPHER_RECENT

    password = os.environ.get("NEO4J_PASSWORD")
    auth = None if not password else (os.environ.get("NEO4J_USER", "neo4j"), password)
    driver = neo4j.AsyncGraphDatabase.driver(os.environ["NEO4J_URI"], auth=auth)
    try:
        async with driver.session(database=os.environ.get("NEO4J_DATABASE", "neo4j")) as session:
            result = await session.run(f"EXPLAIN {CYPHER_RECENT}", tenant="t1", n=2)
            summary = await result.consume()
    finally:
        await driver.close()

    def operators(plan: dict[str, object]) -> list[str]:
        children = plan.get("children", [])
        assert isinstance(children, list)
        name = str(plan["operatorType"]).split("@")[0]
        return [name] + [op for child in children for op in operators(child)]

    assert summary.plan is not None
    ops = operators(summary.plan)
    # A seek of the (tenant, created_at) index, in its order: no label scan, no sort or top-n.
    assert "NodeIndexSeek" in ops
    assert not {"NodeByLabelScan", "AllNodesScan", "Sort", "Top", "PartialSort"} & set(ops)
