"""The base of the SQLite store's kinds: one record kind's operations over the store's file.

Each kind module (episodes, topics, ...) defines its classes on `SqliteKind`, whose `_run`, `_fetch`
and `_write` run on the worker thread of the one `SqliteConnection` the store is.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from memory.stores.sqlite.connection import Conn, Params, SqliteConnection

P = ParamSpec("P")
T = TypeVar("T")


class SqliteKind:
    """The operations of one record kind, run on the store's one connection."""

    def __init__(self, db: SqliteConnection) -> None:
        self._db = db

    async def _run(
        self, fn: Callable[Concatenate[Conn, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `fn(conn, *args, **kwargs)` on the connection's worker thread."""
        return await self._db._run(fn, *args, **kwargs)

    async def _fetch(self, sql: str, params: Params) -> list[sqlite3.Row]:
        """The rows of one read query."""
        return await self._db._fetch(sql, params)

    async def _write(self, sql: str, params: Params) -> int:
        """Run one write statement as its own transaction; the number of rows changed."""
        return await self._db._write(sql, params)
