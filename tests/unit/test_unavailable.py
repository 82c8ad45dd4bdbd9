"""`memory.stores.errors.unavailable`: what trips the store breaker and stops an outbox drain
(the store could not be reached) against what sends one record to the dead letter (the store
answered and refused it)."""

from __future__ import annotations

import sqlite3

from neo4j.exceptions import Neo4jError

from memory.stores.errors import (
    NotFound,
    StoreClosed,
    StoreError,
    StoreLocked,
    StoreUnavailable,
    uid_taken,
    unavailable,
)


def neo4j_error(code: str) -> Neo4jError:
    return Neo4jError._hydrate_neo4j(code=code, message="from the server")


def test_unreachable_stores_are_unavailable() -> None:
    for exc in (
        StoreUnavailable("down"),
        StoreLocked("held", "123"),
        StoreClosed("closed"),
        ConnectionRefusedError(),
        TimeoutError(),
        OSError(5, "I/O error"),
        neo4j_error("Neo.TransientError.Transaction.DeadlockDetected"),
    ):
        assert unavailable(exc), exc


def test_refusals_are_not() -> None:
    for exc in (
        uid_taken("episode", "u1"),
        StoreError("schema"),
        NotFound("gone"),
        ValueError("bad record"),
        KeyError("tenant"),
        sqlite3.IntegrityError("UNIQUE constraint failed: episodes.uid"),
        neo4j_error("Neo.ClientError.Schema.ConstraintValidationFailed"),
    ):
        assert not unavailable(exc), exc
