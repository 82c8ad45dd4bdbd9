"""Setup: idempotent, safe from two processes at once; plus the SQLite file's failure modes."""

from __future__ import annotations

import os
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest

from memory.schema import SCHEMA_VERSION
from memory.settings import Settings
from memory.stores.base import GraphStore, SchemaMismatch, StoreError, StoreUnavailable
from memory.stores.sqlite import SqliteGraphStore

from ._support import CHILD_OPEN_STORE, new_episode, spawn_child

# Run by each child process: wait for a shared start time, then set up and write, repeatedly.
CHILD = CHILD_OPEN_STORE + textwrap.dedent(
    """
    import asyncio, sys, time
    from memory.schema import NewEpisode

    backend, target, name, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

    async def main():
        for i in range(4):
            store = open_store(backend, target)
            if i == 0:
                time.sleep(max(0.0, start - time.time()))
            await store.setup()
            await store.episodes.create(
                NewEpisode(tenant="setup-race", thread_id=name, user_text=f"{name} {i}", agent_text="")
            )
            await store.close()

    asyncio.run(main())
    """
)


async def test_setup_twice_is_harmless(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "survives", uid="ep"))
    await graph.setup()
    await graph.setup()
    assert await graph.schema_version() == SCHEMA_VERSION
    assert await graph.episodes.get("t1", "ep") is not None
    await graph.ping()


async def test_setup_from_two_processes_at_once(graph: GraphStore, tmp_path: Path) -> None:
    if graph.backend == "sqlite":
        target = str(tmp_path / "race.sqlite3")
        checker: GraphStore = SqliteGraphStore(target)
    else:
        target = os.environ["NEO4J_URI"]
        checker = graph
    start = f"{time.time() + 2.0:.3f}"  # after both interpreters have imported everything
    procs = [
        await spawn_child(CHILD, graph.backend, target, name, start) for name in ("one", "two")
    ]
    outputs = [await p.communicate() for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode(errors="replace")[-3000:]

    try:
        assert await checker.schema_version() == SCHEMA_VERSION
        assert await checker.episodes.count("setup-race") == 8
        uids = await checker.episodes.list_uids("setup-race")
        around = await checker.episodes.neighbours("setup-race", uids[0], 10)
        assert len(around) == 7  # one chain through all eight
    finally:
        if checker is not graph:
            await checker.close()


# --------------------------------------------------------------------------- SQLite only


async def test_sqlite_schema_version_and_lazy_setup(tmp_path: Path) -> None:
    store = SqliteGraphStore(tmp_path / "lazy.sqlite3")
    try:
        assert await store.schema_version() is None
        await store.episodes.create(new_episode("t1", "first use sets up", uid="ep"))
        assert await store.schema_version() == SCHEMA_VERSION
    finally:
        await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.episodes.count("t1")
    await store.close()


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "newer.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
    conn.close()

    again = SqliteGraphStore(path)
    try:
        with pytest.raises(SchemaMismatch, match="newer"):
            await again.setup()
        with pytest.raises(SchemaMismatch, match=str(path)):
            await again.episodes.count("t1")
    finally:
        await again.close()


async def test_sqlite_unusable_path_says_what_to_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    store = SqliteGraphStore(blocker / "graph.sqlite3")
    try:
        with pytest.raises(StoreUnavailable) as info:
            await store.ping()
        assert str(blocker / "graph.sqlite3") in str(info.value)
        assert "MNEME_SQLITE_PATH" in str(info.value)
        with pytest.raises(StoreUnavailable):
            await store.episodes.count("t1")
    finally:
        await store.close()

    settings = Settings(_env_file=None, data_dir=blocker / "data")  # type: ignore[call-arg]
    with pytest.raises(StoreUnavailable, match="MNEME_DATA_DIR"):
        SqliteGraphStore.from_settings(settings)

    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database file at all" * 100)
    store = SqliteGraphStore(garbage)
    try:
        with pytest.raises(StoreUnavailable, match="not a usable SQLite database"):
            await store.ping()
    finally:
        await store.close()


async def test_sqlite_from_settings_creates_the_directory(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "deep" / "data")  # type: ignore[call-arg]
    store = SqliteGraphStore.from_settings(settings)
    try:
        assert store.backend == "sqlite"
        assert store.path == tmp_path / "deep" / "data" / "graph.sqlite3"
        await store.ping()
        await store.setup()
        assert store.path.exists()
    finally:
        await store.close()


async def test_sqlite_two_handles_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    a, b = SqliteGraphStore(path), SqliteGraphStore(path)
    try:
        await a.setup()
        await b.setup()
        await a.episodes.create(new_episode("t1", "from a", 0, uid="a"))
        await b.episodes.create(new_episode("t1", "from b", 1, uid="b"))
        assert await a.episodes.list_uids("t1") == ["a", "b"]
        assert [n.episode.uid for n in await b.episodes.neighbours("t1", "a", 1)] == ["b"]
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
    finally:
        await a.close()
        await b.close()


async def test_sqlite_a_locked_file_says_so_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite3"
    store = SqliteGraphStore(path, busy_timeout_s=0.2)
    try:
        await store.setup()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        try:
            with pytest.raises(StoreUnavailable, match="locked by another process"):
                await store.episodes.create(new_episode("t1", "blocked", uid="ep"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await store.episodes.get("t1", "ep") is None
        assert (
            await store.episodes.create(new_episode("t1", "blocked", uid="ep"))
        ).duplicate is False
    finally:
        await store.close()
