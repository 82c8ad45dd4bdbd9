"""Helpers shared by the contract tests: a fixed clock, an episode builder and the store
opening of child processes."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.schema import NewEpisode

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
"""A fixed instant with microseconds, so that round trips are checked to the microsecond."""


def at(minutes: float) -> datetime:
    """T0 shifted by some minutes."""
    return T0 + timedelta(minutes=minutes)


def new_episode(
    tenant: str,
    text: str,
    minutes: float = 0,
    *,
    uid: str | None = None,
    agent_text: str = "noted",
    thread_id: str = "thread-1",
) -> NewEpisode:
    """A NewEpisode at T0 + minutes, with an explicit uid when given."""
    extra = {"uid": uid} if uid is not None else {}
    return NewEpisode(
        tenant=tenant,
        thread_id=thread_id,
        user_text=text,
        agent_text=agent_text,
        created_at=at(minutes),
        **extra,
    )


CHILD_OPEN_STORE = """
import os

def open_store(backend, target):
    if backend == "sqlite":
        from memory.stores.sqlite import SqliteGraphStore
        return SqliteGraphStore(target)
    from memory.stores.neo4j import Neo4jGraphStore
    return Neo4jGraphStore(
        uri=target,
        user=os.environ.get("NEO4J_USER", "neo4j"),
        password=os.environ.get("NEO4J_PASSWORD") or None,
        database=os.environ.get("NEO4J_DATABASE", "neo4j"),
    )
"""
"""Source a child process runs first: `open_store(backend, target)`, a SQLite file or the Neo4j
at a URI, as the parent's `graph` fixture opens it."""

ROOT = Path(__file__).resolve().parents[2]


async def spawn_child(code: str, *args: str) -> asyncio.subprocess.Process:
    """`python -c code args...` on this checkout, its stdin, stdout and stderr piped."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


BAD_TENANTS = {
    "NUL": "alice\x00",
    "ESC": "alice\x1b[31m",
    "129 characters": "a" * 129,
    "512 characters": "a" * 512,
    "leading space": " alice",
    "trailing space": "alice ",
    "lone surrogate": "alice\ud800",
    "empty": "",
    "zero-width space": "ali\u200bce",
    "not NFC": "Zoe\u0301",
}
"""Ids the tenant rule (`memory.tenant`) refuses, by what is wrong with them: each is one
cleaning or trimming away from a real id (`alice`, `a` * 128, `Zoé`), so a layer that cleaned
instead of refusing would reach that tenant's memory."""
