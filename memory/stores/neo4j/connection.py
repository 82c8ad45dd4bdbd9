"""The Neo4j graph store's plumbing: the driver, sessions, retries, transactions and setup.

The kind modules beside this one (episodes, topics, ...) hold the Cypher; each defines its
kinds' operations objects on `kind.Neo4jKind`, over the store's one `Neo4jConnection`, whose
methods run their queries through `_read`, `_write` and `_tx`. The only
values ever formatted into a query are validated integers (`with_bound`: path lengths, which
Cypher cannot take as parameters). Writes that must see a consistent chain (episodes, evidence,
snapshots) first take a per-tenant write lock on the tenant's `:Tenant` node (`LOCK_TENANT`),
which serialises them across processes.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, LiteralString, Self, TypeVar, cast

from neo4j import (
    READ_ACCESS,
    WRITE_ACCESS,
    AsyncDriver,
    AsyncGraphDatabase,
    AsyncSession,
    AsyncTransaction,
)
from neo4j.exceptions import (
    AuthError,
    ClientError,
    DriverError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

from memory.schema import SCHEMA_VERSION
from memory.settings import ConfigError, Settings
from memory.stores.errors import SchemaMismatch, StoreClosed, StoreError, StoreUnavailable
from memory.stores.neo4j.props import Props

T = TypeVar("T")
Work = Callable[[AsyncTransaction], Awaitable[T]]
Attempt = Callable[[AsyncSession], Awaitable[T]]

TRANSIENT_RETRY_S = 10.0
"""How long a transaction that hit a deadlock or another transient error is retried."""
HANDSHAKE_TIMEOUT_S = 10.0
"""How long opening a connection (TCP + Bolt greeting) may take before the server counts as hung."""
POOL_SIZE = 50
"""Connections per store; more concurrent operations queue in the store, not in the driver."""

# Another process created the same index or constraint between our IF NOT EXISTS and its commit.
_SCHEMA_RACE_CODES = frozenset(
    {
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "Neo.ClientError.Schema.ConstraintAlreadyExists",
        "Neo.ClientError.Schema.IndexAlreadyExists",
    }
)
_SCHEMA_NAME = re.compile(r"^CREATE (?:CONSTRAINT|INDEX) (\w+) IF NOT EXISTS")

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT tenant_id IF NOT EXISTS FOR (n:Tenant) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT meta_key IF NOT EXISTS FOR (n:MnemeMeta) REQUIRE n.key IS UNIQUE",
)
"""The store's own constraints (tenant locks, the schema version); each kind module has its own.

Neo4j Community constraints and indexes: property uniqueness is Community, node keys are not."""

LOCK_TENANT = """
MERGE (t:Tenant {id: $tenant})
ON CREATE SET t.tenant = $tenant, t.lock = 0
SET t.lock = t.lock + 1
"""

_SCHEMA_VERSION = "MATCH (m:MnemeMeta {key: 'schema_version'}) RETURN m.value AS value"

_RECORD_VERSION = """
MERGE (m:MnemeMeta {key: 'schema_version'})
ON CREATE SET m.value = $version
WITH m, m.value AS found
SET m.value = CASE WHEN found < $version THEN $version ELSE found END
RETURN found
"""


ERASE_BATCH = 2_000
"""Nodes deleted per transaction by `erase_tenant` (bounded memory on a large tenant)."""

_ERASE_BY_LABEL: tuple[LiteralString, ...] = tuple(
    f"MATCH (n:{label}) WHERE n.tenant = $tenant WITH n LIMIT $batch "
    "DETACH DELETE n RETURN count(*) AS n"
    for label in (
        "Episode",
        "Fact",
        "Feature",
        "Belief",
        "Topic",
        "Entity",
        "PersonalitySnapshot",
        "Summary",
        "TenantState",
        "Concept",
        "DiaryEntry",
        "Goal",
        "Emotion",
    )
)
"""Every label of a tenant's nodes (each has a `tenant` property); labels from our own code."""

_ERASE_LOCK: LiteralString = (
    "MATCH (t:Tenant) WHERE t.id = $tenant WITH t LIMIT $batch DETACH DELETE t RETURN count(*) AS n"
)


def _schema_name(statement: str) -> str | None:
    """The name a schema statement creates (every statement in a SCHEMA names its rule)."""
    match = _SCHEMA_NAME.match(statement)
    return match.group(1) if match else None


def with_bound(query: str, *bounds: int) -> LiteralString:
    """`query` with its `%d` path lengths filled in (validated non-negative ints)."""
    # Path lengths cannot be parameters; they are validated non-negative ints, so formatting them
    # cannot inject anything.
    return query % bounds


async def tx_rows(tx: AsyncTransaction, query: LiteralString, params: Props) -> list[Props]:
    """The records of one query inside a transaction, as dicts."""
    result = await tx.run(query, params)
    return await result.data()


async def tx_run(tx: AsyncTransaction, query: LiteralString, params: Props) -> None:
    """Run one query inside a transaction, discarding its records."""
    result = await tx.run(query, params)
    await result.consume()


class Neo4jConnection:
    """One driver to a Neo4j 5 server (Community or Enterprise), shared by the store's kinds."""

    schema: ClassVar[tuple[str, ...]] = SCHEMA
    """Every constraint and index; the store sets it from the kind modules."""
    migrations: ClassVar[dict[int, tuple[str, ...]]] = {}
    """Version n -> n+1 statements, run by `setup` before the schema."""

    def __init__(
        self,
        uri: str,
        user: str = "neo4j",
        password: str | None = None,
        database: str = "neo4j",
        *,
        connect_timeout_s: float = 2.0,
    ) -> None:
        self.uri = uri
        self.database = database
        self._connect_timeout_s = connect_timeout_s
        auth = None if password is None else (user, password)
        try:
            # Creating the driver does not connect; the first query does.
            self._driver: AsyncDriver = AsyncGraphDatabase.driver(
                uri,
                auth=auth,
                user_agent="mneme",
                # A refused or unreachable server fails within connection_timeout (TCP). The
                # acquisition timeout also bounds the Bolt handshake: measured on a loaded
                # 2-core box, 2 s made a busy-but-healthy server look down, so a server that
                # accepts and then says nothing fails after HANDSHAKE_TIMEOUT_S instead. It
                # never waits for a busy pool: the store opens at most POOL_SIZE sessions.
                connection_timeout=connect_timeout_s,
                connection_acquisition_timeout=max(connect_timeout_s, HANDSHAKE_TIMEOUT_S),
                max_connection_pool_size=POOL_SIZE,
                # Only the driver's managed transactions use this; this store retries itself.
                max_transaction_retry_time=connect_timeout_s,
                # Server hints stay in the server's logs; as Python warnings they would fail a
                # test run that treats warnings as errors.
                warn_notification_severity="OFF",
            )
        except (ValueError, DriverError) as exc:
            raise ConfigError(
                f"NEO4J_URI={uri!r} is not usable ({exc}); use bolt://host:7687 or neo4j://host"
            ) from None
        # Every session of this store reads its own writes, also on a cluster.
        self._bookmarks = AsyncGraphDatabase.bookmark_manager()
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(POOL_SIZE)
        self._closed = False
        self._compose()

    def _compose(self) -> None:
        """Build what lives on this connection: the store's kinds (here, nothing)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """The store at `settings.neo4j_uri`, with its credentials, database and timeout."""
        if not settings.neo4j_uri:
            raise ConfigError("NEO4J_URI is not set; set it (e.g. bolt://127.0.0.1:7687)")
        password = settings.neo4j_password
        return cls(
            settings.neo4j_uri,
            settings.neo4j_user,
            None if password is None else password.get_secret_value(),
            settings.neo4j_database,
            connect_timeout_s=settings.connect_timeout_s,
        )

    # ---- plumbing

    def _down(self, exc: BaseException) -> StoreUnavailable:
        reason = " ".join(str(exc).split())  # the driver's reason spans lines
        return StoreUnavailable(
            f"NEO4J_URI is set but Neo4j does not answer at {self.uri} ({reason}); start Neo4j "
            "(tools/neo4j/neo4j.sh start) or unset NEO4J_URI to use the embedded store"
        )

    def _translate(self, exc: Neo4jError) -> StoreError | None:
        if isinstance(exc, AuthError):
            return StoreUnavailable(
                f"Neo4j at {self.uri} rejected the credentials ({exc.message}); set NEO4J_USER "
                "and NEO4J_PASSWORD, or unset NEO4J_URI to use the embedded store"
            )
        if exc.code == "Neo.ClientError.Database.DatabaseNotFound":
            return StoreUnavailable(
                f"Neo4j at {self.uri} has no database {self.database!r}; create it or set "
                "NEO4J_DATABASE to an existing one (Community has only 'neo4j')"
            )
        return None

    async def _run(self, attempt: Attempt[T], *, write: bool, lazy_setup: bool = True) -> T:
        """Run `attempt` in a fresh session, retrying transient failures within bounded time.

        A server that does not answer fails within about `connect_timeout_s`, with the fix in
        the message; deadlocks and other transient errors are retried for `TRANSIENT_RETRY_S`.
        """
        if self._closed:
            raise StoreClosed(f"the Neo4j graph store for {self.uri} is closed")
        if lazy_setup and not self._ready:
            await self._ensure_ready()
        started = time.monotonic()
        tries = 0
        mode = WRITE_ACCESS if write else READ_ACCESS
        while True:
            try:
                async with (
                    self._slots,
                    self._driver.session(
                        database=self.database,
                        default_access_mode=mode,
                        bookmark_manager=self._bookmarks,
                    ) as session,
                ):
                    return await attempt(session)
            except IncompleteCommit as exc:
                raise self._down(exc) from exc  # the outcome is unknown: never retry blindly
            except (ServiceUnavailable, SessionExpired) as exc:
                # Half the timeout for quick retries (a cluster electing a leader, a restart);
                # a refused connection then fails in ~1 s, a silent host in one connect timeout.
                budget = self._connect_timeout_s / 2
                failure: BaseException = exc
            except Neo4jError as exc:
                translated = self._translate(exc)
                if translated is not None:
                    raise translated from exc
                if not exc.is_retryable():
                    raise
                budget, failure = TRANSIENT_RETRY_S, exc
            tries += 1
            delay = min(0.02 * 2**tries, 0.5) * random.uniform(0.7, 1.3)
            if time.monotonic() - started + delay > budget:
                if isinstance(failure, Neo4jError):
                    raise failure
                raise self._down(failure) from failure
            await asyncio.sleep(delay)

    async def _tx(self, work: Work[T], *, write: bool = True, lazy_setup: bool = True) -> T:
        """Run `work` in one explicit transaction (committed unless `work` rolled it back)."""

        async def attempt(session: AsyncSession) -> T:
            tx = await session.begin_transaction()
            try:
                result = await work(tx)
                if not tx.closed():
                    await tx.commit()
                return result
            finally:
                if not tx.closed():
                    await tx.close()

        return await self._run(attempt, write=write, lazy_setup=lazy_setup)

    async def _query(
        self, query: LiteralString, params: Props, *, write: bool, lazy_setup: bool = True
    ) -> list[Props]:
        """Run one query as its own auto-commit transaction: one round trip, not three."""

        async def attempt(session: AsyncSession) -> list[Props]:
            result = await session.run(query, params)
            return await result.data()

        return await self._run(attempt, write=write, lazy_setup=lazy_setup)

    async def _read(self, query: LiteralString, **params: Any) -> list[Props]:
        """The records of one read query, as dicts."""
        return await self._query(query, params, write=False)

    async def _write(self, query: LiteralString, **params: Any) -> list[Props]:
        """The records of one write query (its own transaction), as dicts."""
        return await self._query(query, params, write=True)

    async def _ensure_ready(self) -> None:
        # Schema on first use too (docs/design.md section 4): a database already at this version costs one read.
        async with self._ready_lock:
            if not self._ready:
                if await self.schema_version() != SCHEMA_VERSION:
                    await self.setup()
                self._ready = True

    # ---- lifecycle

    async def setup(self) -> None:
        """Migrate an older schema, create constraints, indexes and the schema-version node;
        idempotent, race-safe."""
        before = await self.schema_version()
        if before is not None and before < SCHEMA_VERSION:
            for version in range(before, SCHEMA_VERSION):
                for statement in self.migrations.get(version, ()):
                    await self._query(statement, {}, write=True, lazy_setup=False)
        existing = await self._schema_names()
        missing = [q for q in self.schema if _schema_name(q) not in existing]
        for statement in missing:
            try:
                # Schema commands run alone in their own transaction, one after another.
                await self._query(statement, {}, write=True, lazy_setup=False)
            except ClientError as exc:
                if exc.code not in _SCHEMA_RACE_CODES:
                    raise
        if missing:
            await self._query("CALL db.awaitIndexes(300)", {}, write=False, lazy_setup=False)
        rows = await self._query(
            _RECORD_VERSION, {"version": SCHEMA_VERSION}, write=True, lazy_setup=False
        )
        found = cast(int | None, rows[0]["found"])
        if found is not None and found > SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the Neo4j database {self.database!r} at {self.uri} holds mneme schema version "
                f"{found}, newer than this mneme's {SCHEMA_VERSION}; upgrade mneme, or point "
                "NEO4J_URI / NEO4J_DATABASE at another database"
            )
        self._ready = True

    async def _schema_names(self) -> set[str]:
        """Names of the constraints and indexes already there (empty if we may not list them)."""
        names: set[str] = set()
        try:
            for query in ("SHOW CONSTRAINTS YIELD name", "SHOW INDEXES YIELD name"):
                rows = await self._query(query, {}, write=False, lazy_setup=False)
                names.update(row["name"] for row in rows)
        except ClientError:
            return set()  # e.g. no SHOW privilege: fall back to IF NOT EXISTS for everything
        return names

    async def schema_version(self) -> int | None:
        """The schema version recorded in the database, or None before setup."""
        rows = await self._query(_SCHEMA_VERSION, {}, write=False, lazy_setup=False)
        return None if not rows else cast(int, rows[0]["value"])

    async def ping(self) -> None:
        """Raise `StoreUnavailable` (with the fix) unless the server answers a query."""
        await self._query("RETURN 1", {}, write=False, lazy_setup=False)

    async def close(self) -> None:
        """Close the driver and its connections; idempotent."""
        if not self._closed:
            self._closed = True
            await self._driver.close()

    async def _erase_tenant(self, tenant: str) -> int:
        """Delete every node of the tenant with its edges, in committed batches of
        `ERASE_BATCH`; the number of nodes deleted (re-running after a crash finishes it)."""
        deleted = 0
        for query in (*_ERASE_BY_LABEL, _ERASE_LOCK):
            while True:
                rows = await self._write(query, tenant=tenant, batch=ERASE_BATCH)
                n = int(rows[0]["n"]) if rows else 0
                deleted += n
                if n < ERASE_BATCH:
                    break
        return deleted

    async def _wipe_for_tests(self) -> None:
        """Delete every node but keep the schema and its version (the contract suite's reset)."""
        await self._write("MATCH (n) WHERE NOT n:MnemeMeta DETACH DELETE n")
