"""The base of the Neo4j store's kinds: one record kind's operations over the store's driver.

Each kind module (episodes, topics, ...) defines its classes on `Neo4jKind`, whose `_read`,
`_write` and `_tx` run through the one `Neo4jConnection` the store is.
"""

from __future__ import annotations

from typing import Any, LiteralString, TypeVar

from memory.stores.neo4j.connection import Neo4jConnection, Work
from memory.stores.neo4j.props import Props

T = TypeVar("T")


class Neo4jKind:
    """The operations of one record kind, run through the store's one driver."""

    def __init__(self, db: Neo4jConnection) -> None:
        self._db = db

    async def _tx(self, work: Work[T], *, write: bool = True) -> T:
        """Run `work` in one explicit transaction (committed unless `work` rolled it back)."""
        return await self._db._tx(work, write=write)

    async def _read(self, query: LiteralString, **params: Any) -> list[Props]:
        """The records of one read query, as dicts."""
        return await self._db._read(query, **params)

    async def _write(self, query: LiteralString, **params: Any) -> list[Props]:
        """The records of one write query (its own transaction), as dicts."""
        return await self._db._write(query, **params)
