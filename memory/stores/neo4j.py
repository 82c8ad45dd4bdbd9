"""The production graph store: Neo4j over Bolt, through the official async driver.

Every query is parameterised Cypher kept in this module; the only values ever formatted into a
query are validated integers (path lengths, which Cypher cannot take as parameters). It knows
nothing of LangGraph, vectors or scoring.

Datetimes are stored as native Neo4j DateTime values in UTC (nanosecond precision, so Python's
microseconds round-trip exactly, and range indexes order them chronologically). An episode's ESS
is stored flat (`ess_score`, `ess_specificity`, ...), so that Cypher can filter on its signals.
Writes that must see a consistent chain (episodes, evidence, snapshots) first take a per-tenant
write lock on the tenant's `:Tenant` node, which serialises them across processes.

Needs Neo4j 5.23 or later (Community is enough): scoped `CALL (x) { ... }` subqueries and the
`ANY SHORTEST` path selector.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, LiteralString, TypeVar, cast

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
    ConstraintError,
    DriverError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)
from neo4j.time import DateTime as Neo4jDateTime

from memory.schema import (
    ESS,
    NEO4J_SCHEMA,
    SCHEMA_VERSION,
    SIGNAL_NAMES,
    STATUS_ORDER,
    Belief,
    Entity,
    EntityHit,
    EntityType,
    Episode,
    EpisodeHit,
    EpisodeStatus,
    Evidence,
    EvidenceKind,
    Fact,
    Neighbour,
    NewEpisode,
    PersonalitySnapshot,
    ReasoningType,
    as_utc,
    clean_text,
    content_hash,
    entity_key,
    episode_content,
    utcnow,
)
from memory.settings import ConfigError, Settings
from memory.stores.base import (
    CreateResult,
    GraphStore,
    NotFound,
    SchemaMismatch,
    StoreError,
    StoreUnavailable,
)

T = TypeVar("T")
Props = dict[str, Any]
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
_ESS_FIELDS = ("score", *SIGNAL_NAMES)
_SCHEMA_NAME = re.compile(r"^CREATE (?:CONSTRAINT|INDEX) (\w+) IF NOT EXISTS")


def _schema_name(statement: str) -> str | None:
    """The name a schema statement creates (every statement in NEO4J_SCHEMA names its rule)."""
    match = _SCHEMA_NAME.match(statement)
    return match.group(1) if match else None


# --------------------------------------------------------------------------- Cypher


def _with_bound(query: str, *bounds: int) -> LiteralString:
    # Path lengths cannot be parameters; they are validated non-negative ints, so formatting them
    # cannot inject anything.
    return query % bounds


_LOCK_TENANT = """
MERGE (t:Tenant {id: $tenant})
ON CREATE SET t.tenant = $tenant, t.lock = 0
SET t.lock = t.lock + 1
"""

_FIND_BY_HASH = """
MATCH (d:Episode {tenant: $tenant, content_hash: $hash})
RETURN d.uid AS uid
"""

# One statement, so one round trip: take the tenant lock, look for the content hash, and only
# when it is new create the episode and splice it into the chain between its predecessor (the
# greatest (created_at, uid) below it) and its successor (the smallest above it). Each neighbour
# is the nearer of two candidates, same instant or earlier/later instant; both lookups walk the
# (tenant, created_at) index in order (ORDER BY starts with p.tenant for that), so an insert
# reads a handful of index entries however long the chain is.
_CREATE_EPISODE = (
    _LOCK_TENANT
    + """
WITH t
OPTIONAL MATCH (d:Episode {tenant: $tenant, content_hash: $hash})
CALL (d) {
    UNWIND CASE WHEN d IS NULL THEN [1] ELSE [] END AS _new
    CALL () {
        OPTIONAL MATCH (p:Episode)
            WHERE p.tenant = $tenant AND p.created_at = $created_at AND p.uid < $uid
        RETURN p AS same_before ORDER BY p.uid DESC LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (p:Episode) WHERE p.tenant = $tenant AND p.created_at < $created_at
        RETURN p AS before ORDER BY p.tenant DESC, p.created_at DESC, p.uid DESC LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (s:Episode)
            WHERE s.tenant = $tenant AND s.created_at = $created_at AND s.uid > $uid
        RETURN s AS same_after ORDER BY s.uid LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (s:Episode) WHERE s.tenant = $tenant AND s.created_at > $created_at
        RETURN s AS after ORDER BY s.tenant, s.created_at, s.uid LIMIT 1
    }
    WITH coalesce(same_before, before) AS p, coalesce(same_after, after) AS s
    CREATE (e:Episode)
    SET e = $props
    WITH p, s, e
    OPTIONAL MATCH (p)-[r:TEMPORAL_NEXT]->(s)
    DELETE r
    FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | CREATE (p)-[:TEMPORAL_NEXT]->(e))
    FOREACH (_ IN CASE WHEN s IS NULL THEN [] ELSE [1] END | CREATE (e)-[:TEMPORAL_NEXT]->(s))
}
RETURN d.uid AS existing
"""
)

_DELETE_EPISODE = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
OPTIONAL MATCH (p:Episode)-[:TEMPORAL_NEXT]->(e)
OPTIONAL MATCH (e)-[:TEMPORAL_NEXT]->(s:Episode)
DETACH DELETE e
WITH p, s
FOREACH (_ IN CASE WHEN p IS NULL OR s IS NULL THEN [] ELSE [1] END |
    CREATE (p)-[:TEMPORAL_NEXT]->(s))
RETURN count(*) AS deleted
"""

# Tenant-wide scans: the IS NOT NULL on the second property lets the planner seek the composite
# (tenant, ...) index instead of scanning every tenant's nodes (one statement each below).
_TENANT_EPISODES = "MATCH (e:Episode) WHERE e.tenant = $tenant AND e.created_at IS NOT NULL"

# Tenant nodes are the tenants that ever wrote; those with an episode left are listed.
_TENANTS = """
MATCH (t:Tenant)
WHERE EXISTS { MATCH (e:Episode) WHERE e.tenant = t.id AND e.created_at IS NOT NULL }
RETURN t.id AS tenant
"""

_GET_EPISODE = "MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant RETURN e {.*} AS e"

_GET_EPISODES = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
RETURN e {.*} AS e
"""

_NEIGHBOURS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
CALL (e) {
    MATCH p = (e)-[:TEMPORAL_NEXT*1..%d]->(n:Episode)
    RETURN length(p) AS offset, n
    UNION ALL
    MATCH p = (n:Episode)-[:TEMPORAL_NEXT*1..%d]->(e)
    RETURN -length(p) AS offset, n
}
RETURN offset, n {.*} AS e ORDER BY offset
"""

_SET_STATUS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant AND e.status IN $from
SET e.status = $status
RETURN count(e) AS changed
"""

_BY_STATUS = """
MATCH (e:Episode) WHERE e.tenant = $tenant AND e.status IN $statuses
RETURN e {.*} AS e ORDER BY e.created_at, e.uid LIMIT $limit
"""
_BY_STATUS_ALL = """
MATCH (e:Episode) WHERE e.status IN $statuses
RETURN e {.*} AS e ORDER BY e.created_at, e.uid LIMIT $limit
"""

_RECORD_ACCESS = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
SET e.access_count = e.access_count + 1, e.last_accessed = $at
"""

_SET_PROPS = "MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant SET e += $props"

_UPDATE_SCORES = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
SET e.salience = coalesce($salience, e.salience),
    e.utility_score = coalesce($utility_score, e.utility_score),
    e.archived = coalesce($archived, e.archived)
"""

_LINK_TOPICS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
UNWIND $slugs AS slug
MERGE (t:Topic {tenant: $tenant, slug: slug})
MERGE (e)-[:DISCUSSES]->(t)
"""

_EPISODE_TOPICS = """
MATCH (e:Episode {uid: $uid})-[:DISCUSSES]->(t:Topic) WHERE e.tenant = $tenant
RETURN DISTINCT t.slug AS slug
"""

_TOPIC_EPISODES = """
MATCH (e:Episode)-[:DISCUSSES]->(t:Topic {tenant: $tenant, slug: $slug})
WITH DISTINCT e
RETURN e.uid AS uid ORDER BY e.created_at DESC, e.uid LIMIT $limit
"""

_UPSERT_ENTITY = """
MERGE (n:Entity {tenant: $tenant, key: $key})
ON CREATE SET n.name = $name
SET n.type = $type
RETURN n {.*} AS n
"""

_LINK_MENTIONS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
UNWIND $keys AS key
MATCH (n:Entity {tenant: $tenant, key: key})
MERGE (e)-[:MENTIONS]->(n)
"""

_RELATE = """
MATCH (a:Entity {tenant: $tenant, key: $a})
MATCH (b:Entity {tenant: $tenant, key: $b})
MERGE (a)-[r:RELATED_TO]->(b)
SET r.relation = $relation, r.tenant = $tenant
"""

_GET_ENTITY = "MATCH (n:Entity {tenant: $tenant, key: $key}) RETURN n {.*} AS n"
_LIST_ENTITIES = "MATCH (n:Entity {tenant: $tenant}) WHERE n.key IS NOT NULL RETURN n {.*} AS n"

_EPISODE_ENTITIES = """
MATCH (e:Episode {uid: $uid})-[:MENTIONS]->(n:Entity) WHERE e.tenant = $tenant
RETURN DISTINCT n {.*} AS n
"""

# ANY SHORTEST searches breadth-first per (seed, entity) pair, so dense graphs and cycles cost
# nodes x edges, not the number of paths; `%d` is the validated hop bound (at least 1: a
# quantifier cannot be {0,0}, so zero hops has its own query).
_NEAR = """
MATCH p = ANY SHORTEST (s:Entity)-[:RELATED_TO]-{0,%d}(n:Entity)
WHERE s.tenant = $tenant AND s.key IN $keys
WITH n, min(length(p)) AS d
"""
_SEEDS = """
MATCH (n:Entity) WHERE n.tenant = $tenant AND n.key IN $keys
WITH n, 0 AS d
"""
_NEIGHBOURHOOD = "RETURN n {.*} AS n, d"
_NEAR_EPISODES = """
MATCH (e:Episode)-[:MENTIONS]->(n)
WITH e, min(d) AS d
RETURN e.uid AS uid, d ORDER BY d, e.created_at DESC, e.uid LIMIT $limit
"""


def _near(hops: int, tail: LiteralString) -> LiteralString:
    """The traversal to `hops` (a validated non-negative int), followed by `tail`."""
    return (_SEEDS if hops == 0 else _with_bound(_NEAR, hops)) + tail


_UPSERT_BELIEF = """
MERGE (b:Belief {tenant: $tenant, topic: $topic})
ON CREATE SET b.uid = $uid
SET b += $props
RETURN b {.*} AS b
"""

_GET_BELIEF = "MATCH (b:Belief {uid: $uid}) WHERE b.tenant = $tenant RETURN b {.*} AS b"
_BELIEF_BY_TOPIC = "MATCH (b:Belief {tenant: $tenant, topic: $topic}) RETURN b {.*} AS b"
_LIST_BELIEFS = (
    "MATCH (b:Belief) WHERE b.tenant = $tenant AND b.topic IS NOT NULL RETURN b {.*} AS b"
)

_EVIDENCE_ENDS = """
MATCH (b:Belief {uid: $belief}) WHERE b.tenant = $tenant
MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
OPTIONAL MATCH (e)-[r:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b)
RETURN count(*) AS rows, count(r) AS edges
"""
# One query per kind: relationship types are constants, never parameters.
_ADD_EVIDENCE = {
    kind: f"""
MATCH (b:Belief {{uid: $belief}}) WHERE b.tenant = $tenant
MATCH (e:Episode {{uid: $episode}}) WHERE e.tenant = $tenant
CREATE (e)-[:{kind.value} {{tenant: $tenant, strength: $strength, reasoning: $reasoning,
                            created_at: $created_at}}]->(b)
SET b.evidence_count = b.evidence_count + 1
"""
    for kind in EvidenceKind
}

_BELIEF_EVIDENCE = """
MATCH (e:Episode)-[r:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b:Belief {uid: $uid})
WHERE b.tenant = $tenant
RETURN e.uid AS episode_uid, type(r) AS kind, r.strength AS strength,
       r.reasoning AS reasoning, r.created_at AS created_at
ORDER BY r.strength DESC, e.uid LIMIT $limit
"""

_DELETE_BELIEF = """
MATCH (b:Belief {uid: $uid}) WHERE b.tenant = $tenant
DETACH DELETE b
RETURN count(*) AS deleted
"""

# Idempotent on uid: an existing fact is left as it is. No row back: the uid is another tenant's.
_ADD_FACT = """
MERGE (f:Fact {uid: $uid})
ON CREATE SET f += $props
WITH f WHERE f.tenant = $tenant
RETURN f {.*} AS f
"""

_CITE_FACT = """
MATCH (f:Fact {uid: $fact}) WHERE f.tenant = $tenant
MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
MERGE (e)-[:STATES]->(f)
"""

_CLOSE_FACT = """
MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant
SET f.valid_to = $at, f.superseded_by = $by
"""

_GET_FACT = "MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant RETURN f {.*} AS f"

_LIST_FACTS = """
MATCH (f:Fact) WHERE f.tenant = $tenant AND ($all OR f.superseded_by IS NULL)
RETURN f {.*} AS f ORDER BY f.valid_from, f.uid
"""

_FACT_SOURCES = """
MATCH (e:Episode)-[:STATES]->(f:Fact {uid: $uid}) WHERE f.tenant = $tenant
RETURN DISTINCT e.uid AS uid
"""

_ADD_SNAPSHOT = (
    _LOCK_TENANT
    + """
WITH t
OPTIONAL MATCH (prev:PersonalitySnapshot {tenant: $tenant}) WHERE prev.version IS NOT NULL
WITH prev ORDER BY prev.tenant DESC, prev.version DESC LIMIT 1
CREATE (s:PersonalitySnapshot {tenant: $tenant, version: coalesce(prev.version, 0) + 1,
                               text: $text, created_at: $at})
FOREACH (_ IN CASE WHEN prev IS NULL THEN [] ELSE [1] END | CREATE (s)-[:PREVIOUS]->(prev))
RETURN s {.*} AS s
"""
)

_GET_STATE = """
MATCH (s:TenantState {tenant: $tenant, key: $key})
RETURN s.value AS value
"""

_PUT_STATE = """
MERGE (s:TenantState {tenant: $tenant, key: $key})
SET s.value = $value
"""

_SNAPSHOTS = """
MATCH (s:PersonalitySnapshot {tenant: $tenant}) WHERE s.version IS NOT NULL
RETURN s {.*} AS s ORDER BY s.tenant DESC, s.version DESC LIMIT $limit
"""

_SCHEMA_VERSION = "MATCH (m:MnemeMeta {key: 'schema_version'}) RETURN m.value AS value"

_RECORD_VERSION = """
MERGE (m:MnemeMeta {key: 'schema_version'})
ON CREATE SET m.value = $version
WITH m, m.value AS found
SET m.value = CASE WHEN found < $version THEN $version ELSE found END
RETURN found
"""


# --------------------------------------------------------------------------- conversions


def _dt(value: Any) -> datetime:
    if isinstance(value, Neo4jDateTime):
        return as_utc(value.to_native())
    if isinstance(value, datetime):
        return as_utc(value)
    raise StoreError(f"expected a datetime in the graph, found {value!r}")


def _dt_opt(value: Any) -> datetime | None:
    return None if value is None else _dt(value)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _ess_props(ess: ESS | None) -> Props:
    if ess is None:
        return {}
    props: Props = {f"ess_{name}": float(getattr(ess, name)) for name in _ESS_FIELDS}
    props["ess_reasoning_type"] = ess.reasoning_type.value
    return props


def _ess(p: Mapping[str, Any]) -> ESS | None:
    if p.get("ess_score") is None:
        return None
    fields: Props = {name: p[f"ess_{name}"] for name in _ESS_FIELDS}
    return ESS(reasoning_type=ReasoningType(p["ess_reasoning_type"]), **fields)


def _episode(p: Mapping[str, Any]) -> Episode:
    return Episode(
        uid=p["uid"],
        tenant=p["tenant"],
        thread_id=p["thread_id"],
        content=p["content"],
        user_text=p["user_text"],
        agent_text=p["agent_text"],
        created_at=_dt(p["created_at"]),
        last_accessed=_dt_opt(p.get("last_accessed")),
        access_count=p["access_count"],
        ess=_ess(p),
        status=EpisodeStatus(p["status"]),
        archived=bool(p["archived"]),
        utility_score=p["utility_score"],
        salience=p["salience"],
        content_hash=p["content_hash"],
    )


def _entity(p: Mapping[str, Any]) -> Entity:
    return Entity(tenant=p["tenant"], name=p["name"], type=EntityType(p["type"]))


def _belief(p: Mapping[str, Any]) -> Belief:
    return Belief(
        uid=p["uid"],
        tenant=p["tenant"],
        topic=p["topic"],
        statement=p["statement"],
        valence=p["valence"],
        confidence=p["confidence"],
        evidence_count=p["evidence_count"],
        contested=bool(p["contested"]),
        updated_at=_dt(p["updated_at"]),
    )


def _fact(p: Mapping[str, Any]) -> Fact:
    return Fact(
        uid=p["uid"],
        tenant=p["tenant"],
        text=p["text"],
        confidence=p["confidence"],
        valid_from=_dt(p["valid_from"]),
        valid_to=_dt_opt(p.get("valid_to")),
        superseded_by=p.get("superseded_by"),
    )


def _snapshot(p: Mapping[str, Any]) -> PersonalitySnapshot:
    return PersonalitySnapshot(
        tenant=p["tenant"], version=p["version"], text=p["text"], created_at=_dt(p["created_at"])
    )


def _fact_props(fact: Fact) -> Props:
    return {
        "tenant": fact.tenant,
        "text": clean_text(fact.text),
        "confidence": fact.confidence,
        "valid_from": as_utc(fact.valid_from),
        "valid_to": None if fact.valid_to is None else as_utc(fact.valid_to),
        "superseded_by": fact.superseded_by,
    }


async def _rows(tx: AsyncTransaction, query: LiteralString, params: Props) -> list[Props]:
    result = await tx.run(query, params)
    return await result.data()


async def _exec(tx: AsyncTransaction, query: LiteralString, params: Props) -> None:
    result = await tx.run(query, params)
    await result.consume()


# --------------------------------------------------------------------------- the store


class Neo4jGraphStore(GraphStore):
    """GraphStore over a Neo4j 5 server (Community or Enterprise), one driver per instance."""

    backend = "neo4j"

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

    @classmethod
    def from_settings(cls, settings: Settings) -> Neo4jGraphStore:
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
            raise StoreError(f"the Neo4j graph store for {self.uri} is closed")
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
        return await self._query(query, params, write=False)

    async def _write(self, query: LiteralString, **params: Any) -> list[Props]:
        return await self._query(query, params, write=True)

    async def _ensure_ready(self) -> None:
        # Schema on first use too (DESIGN 4): a database already at this version costs one read.
        async with self._ready_lock:
            if not self._ready:
                if await self.schema_version() != SCHEMA_VERSION:
                    await self.setup()
                self._ready = True

    # ---- lifecycle

    async def setup(self) -> None:
        """Create constraints, indexes and the schema-version node; idempotent, race-safe."""
        existing = await self._schema_names()
        missing = [q for q in NEO4J_SCHEMA if _schema_name(q) not in existing]
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

    async def _wipe_for_tests(self) -> None:
        """Delete every node but keep the schema and its version (the contract suite's reset)."""
        await self._write("MATCH (n) WHERE NOT n:MnemeMeta DETACH DELETE n")

    # ---- episodes

    async def create_episode(self, episode: NewEpisode) -> CreateResult:
        user_text, agent_text = clean_text(episode.user_text), clean_text(episode.agent_text)
        content = episode_content(user_text, agent_text)
        digest = content_hash(content)
        created_at = as_utc(episode.created_at)
        props: Props = {
            "uid": episode.uid,
            "tenant": episode.tenant,
            "thread_id": clean_text(episode.thread_id),
            "content": content,
            "user_text": user_text,
            "agent_text": agent_text,
            "created_at": created_at,
            "access_count": 0,
            "status": EpisodeStatus(episode.status).value,
            "archived": False,
            "utility_score": 0.0,
            "salience": 0.5,
            "content_hash": digest,
            **_ess_props(episode.ess),
        }
        key = {"tenant": episode.tenant, "hash": digest}
        params = key | {"uid": episode.uid, "created_at": created_at, "props": props}
        try:
            rows = await self._write(_CREATE_EPISODE, **params)
        except ConstraintError:
            # Only the uid can clash under the tenant lock, but a writer that bypassed the lock
            # could have stored the same content first: then it is a duplicate after all.
            found = await self._read(_FIND_BY_HASH, **key)
            if found:
                return CreateResult(uid=found[0]["uid"], duplicate=True)
            raise StoreError(
                f"episode uid {episode.uid!r} is already taken by another episode; "
                "give each new episode a fresh uid"
            ) from None
        # A duplicate wrote nothing but the tenant's lock counter.
        existing = rows[0]["existing"]
        if existing is not None:
            return CreateResult(uid=existing, duplicate=True)
        return CreateResult(uid=episode.uid, duplicate=False)

    async def get_episode(self, tenant: str, uid: str) -> Episode | None:
        rows = await self._read(_GET_EPISODE, tenant=tenant, uid=uid)
        return _episode(rows[0]["e"]) if rows else None

    async def get_episodes(self, tenant: str, uids: Sequence[str]) -> list[Episode]:
        distinct = list(dict.fromkeys(uids))
        if not distinct:
            return []
        rows = await self._read(_GET_EPISODES, tenant=tenant, uids=distinct)
        found = {row["e"]["uid"]: _episode(row["e"]) for row in rows}
        return [found[uid] for uid in uids if uid in found]

    async def find_episodes_by_prefix(
        self, tenant: str, prefix: str, limit: int = 10
    ) -> list[Episode]:
        rows = await self._read(
            "MATCH (e:Episode) WHERE e.tenant = $tenant AND e.uid STARTS WITH $prefix "
            "RETURN e {.*} AS e ORDER BY e.uid LIMIT $limit",
            tenant=tenant,
            prefix=prefix,
            limit=_count("limit", limit),
        )
        return [_episode(row["e"]) for row in rows]

    async def temporal_neighbours(self, tenant: str, uid: str, k: int) -> list[Neighbour]:
        if _count("k", k) == 0:
            return []
        rows = await self._read(_with_bound(_NEIGHBOURS, k, k), tenant=tenant, uid=uid)
        return [Neighbour(offset=row["offset"], episode=_episode(row["e"])) for row in rows]

    async def set_status(
        self, tenant: str, uid: str, status: EpisodeStatus, *, only_forward: bool = True
    ) -> bool:
        status = EpisodeStatus(status)
        movable = [
            s.value
            for s in EpisodeStatus
            if s != status and (not only_forward or STATUS_ORDER[s] < STATUS_ORDER[status])
        ]
        rows = await self._write(
            _SET_STATUS, tenant=tenant, uid=uid, status=status.value, **{"from": movable}
        )
        return bool(rows[0]["changed"])

    async def list_by_status(
        self, tenant: str | None, statuses: Sequence[EpisodeStatus], limit: int = 1000
    ) -> list[Episode]:
        wanted = [EpisodeStatus(s).value for s in statuses]
        limit = _count("limit", limit)
        if not wanted:
            return []
        if tenant is None:
            rows = await self._read(_BY_STATUS_ALL, statuses=wanted, limit=limit)
        else:
            rows = await self._read(_BY_STATUS, tenant=tenant, statuses=wanted, limit=limit)
        return [_episode(row["e"]) for row in rows]

    async def list_episode_uids(self, tenant: str | None) -> list[str]:
        if tenant is None:
            rows = await self._read("MATCH (e:Episode) RETURN e.uid AS uid")
        else:
            rows = await self._read(f"{_TENANT_EPISODES} RETURN e.uid AS uid", tenant=tenant)
        # Sorted here: Python (like SQLite) orders strings by code point, Cypher by UTF-16 unit.
        return sorted(row["uid"] for row in rows)

    async def list_tenants(self) -> list[str]:
        rows = await self._read(_TENANTS)
        return sorted(row["tenant"] for row in rows)

    async def record_access(self, tenant: str, uids: Sequence[str], at: datetime) -> None:
        # Each distinct uid counts once per call, however often it appears in `uids`.
        distinct = list(dict.fromkeys(uids))
        if distinct:
            await self._write(_RECORD_ACCESS, tenant=tenant, uids=distinct, at=as_utc(at))

    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        await self._write(_SET_PROPS, tenant=tenant, uid=uid, props=_ess_props(ess))

    async def update_scores(
        self,
        tenant: str,
        uid: str,
        *,
        salience: float | None = None,
        utility_score: float | None = None,
        archived: bool | None = None,
    ) -> None:
        await self._write(
            _UPDATE_SCORES,
            tenant=tenant,
            uid=uid,
            salience=None if salience is None else float(salience),
            utility_score=None if utility_score is None else float(utility_score),
            archived=archived,
        )

    async def delete_episode(self, tenant: str, uid: str) -> bool:
        async def work(tx: AsyncTransaction) -> bool:
            await _exec(tx, _LOCK_TENANT, {"tenant": tenant})
            rows = await _rows(tx, _DELETE_EPISODE, {"tenant": tenant, "uid": uid})
            if not rows[0]["deleted"]:
                await tx.rollback()
                return False
            return True

        return await self._tx(work)

    async def count_episodes(self, tenant: str) -> int:
        rows = await self._read(f"{_TENANT_EPISODES} RETURN count(e) AS n", tenant=tenant)
        return int(rows[0]["n"])

    # ---- topics

    async def link_topics(self, tenant: str, episode_uid: str, slugs: Sequence[str]) -> None:
        cleaned = list(dict.fromkeys(clean_text(s) for s in slugs))
        if cleaned:
            await self._write(_LINK_TOPICS, tenant=tenant, uid=episode_uid, slugs=cleaned)

    async def episode_topics(self, tenant: str, episode_uid: str) -> list[str]:
        rows = await self._read(_EPISODE_TOPICS, tenant=tenant, uid=episode_uid)
        return sorted(row["slug"] for row in rows)

    async def episodes_for_topic(self, tenant: str, slug: str, limit: int = 50) -> list[str]:
        rows = await self._read(
            _TOPIC_EPISODES, tenant=tenant, slug=clean_text(slug), limit=_count("limit", limit)
        )
        return [row["uid"] for row in rows]

    # ---- entities

    async def upsert_entity(self, tenant: str, name: str, type: EntityType) -> Entity:
        name = clean_text(name)
        key = entity_key(name)
        if not key:
            raise ValueError("an entity needs a non-empty name")
        rows = await self._write(
            _UPSERT_ENTITY, tenant=tenant, key=key, name=name, type=EntityType(type).value
        )
        return _entity(rows[0]["n"])

    async def link_mentions(self, tenant: str, episode_uid: str, names: Sequence[str]) -> None:
        keys = list(dict.fromkeys(entity_key(clean_text(n)) for n in names))
        if keys:
            await self._write(_LINK_MENTIONS, tenant=tenant, uid=episode_uid, keys=keys)

    async def relate_entities(self, tenant: str, a: str, b: str, relation: str = "related") -> None:
        await self._write(
            _RELATE,
            tenant=tenant,
            a=entity_key(clean_text(a)),
            b=entity_key(clean_text(b)),
            relation=clean_text(relation),
        )

    async def get_entity(self, tenant: str, name: str) -> Entity | None:
        rows = await self._read(_GET_ENTITY, tenant=tenant, key=entity_key(clean_text(name)))
        return _entity(rows[0]["n"]) if rows else None

    async def list_entities(self, tenant: str) -> list[Entity]:
        rows = await self._read(_LIST_ENTITIES, tenant=tenant)
        return [_entity(n) for n in sorted((row["n"] for row in rows), key=lambda n: n["key"])]

    def _seeds(self, names: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(entity_key(clean_text(n)) for n in names))

    async def entity_neighbourhood(
        self, tenant: str, names: Sequence[str], hops: int
    ) -> list[EntityHit]:
        query = _near(_count("hops", hops), _NEIGHBOURHOOD)
        keys = self._seeds(names)
        if not keys:
            return []
        rows = await self._read(query, tenant=tenant, keys=keys)
        rows.sort(key=lambda row: (row["d"], row["n"]["key"]))
        return [EntityHit(entity=_entity(row["n"]), distance=row["d"]) for row in rows]

    async def episodes_near_entities(
        self, tenant: str, names: Sequence[str], hops: int, limit: int = 50
    ) -> list[EpisodeHit]:
        query = _near(_count("hops", hops), _NEAR_EPISODES)
        limit = _count("limit", limit)
        keys = self._seeds(names)
        if not keys:
            return []
        rows = await self._read(query, tenant=tenant, keys=keys, limit=limit)
        return [EpisodeHit(episode_uid=row["uid"], distance=row["d"]) for row in rows]

    async def episode_entities(self, tenant: str, episode_uid: str) -> list[Entity]:
        rows = await self._read(_EPISODE_ENTITIES, tenant=tenant, uid=episode_uid)
        return [_entity(n) for n in sorted((row["n"] for row in rows), key=lambda n: n["key"])]

    # ---- beliefs

    async def upsert_belief(self, belief: Belief) -> Belief:
        props: Props = {
            "tenant": belief.tenant,
            "statement": clean_text(belief.statement),
            "valence": belief.valence,
            "confidence": belief.confidence,
            "evidence_count": belief.evidence_count,
            "contested": belief.contested,
            "updated_at": as_utc(belief.updated_at),
        }
        try:
            rows = await self._write(
                _UPSERT_BELIEF,
                tenant=belief.tenant,
                topic=clean_text(belief.topic),
                uid=belief.uid,
                props=props,
            )
        except ConstraintError:
            raise StoreError(
                f"belief uid {belief.uid!r} is already taken by a belief on another topic; "
                "give each new belief a fresh uid"
            ) from None
        return _belief(rows[0]["b"])

    async def get_belief(self, tenant: str, uid: str) -> Belief | None:
        rows = await self._read(_GET_BELIEF, tenant=tenant, uid=uid)
        return _belief(rows[0]["b"]) if rows else None

    async def get_belief_by_topic(self, tenant: str, topic: str) -> Belief | None:
        rows = await self._read(_BELIEF_BY_TOPIC, tenant=tenant, topic=clean_text(topic))
        return _belief(rows[0]["b"]) if rows else None

    async def list_beliefs(self, tenant: str) -> list[Belief]:
        rows = await self._read(_LIST_BELIEFS, tenant=tenant)
        return [_belief(b) for b in sorted((row["b"] for row in rows), key=lambda b: b["topic"])]

    async def add_evidence(
        self,
        tenant: str,
        episode_uid: str,
        belief_uid: str,
        kind: EvidenceKind,
        strength: float,
        reasoning: str = "",
    ) -> bool:
        evidence = Evidence(  # validates kind and strength before anything is written
            episode_uid=episode_uid,
            belief_uid=belief_uid,
            kind=kind,
            strength=strength,
            reasoning=clean_text(reasoning),
            created_at=utcnow(),
        )
        params: Props = {"tenant": tenant, "episode": episode_uid, "belief": belief_uid}

        async def work(tx: AsyncTransaction) -> bool:
            # The tenant lock makes "check, then create" atomic against concurrent callers.
            await _exec(tx, _LOCK_TENANT, {"tenant": tenant})
            ends = await _rows(tx, _EVIDENCE_ENDS, params)
            if not ends[0]["rows"] or ends[0]["edges"]:
                await tx.rollback()  # an end is missing, or the pair already has an edge
                return False
            extra = {
                "strength": evidence.strength,
                "reasoning": evidence.reasoning,
                "created_at": evidence.created_at,
            }
            await _exec(tx, _ADD_EVIDENCE[evidence.kind], params | extra)
            return True

        return await self._tx(work)

    async def belief_evidence(
        self, tenant: str, belief_uid: str, limit: int = 20
    ) -> list[Evidence]:
        rows = await self._read(
            _BELIEF_EVIDENCE, tenant=tenant, uid=belief_uid, limit=_count("limit", limit)
        )
        return [
            Evidence(
                episode_uid=row["episode_uid"],
                belief_uid=belief_uid,
                kind=EvidenceKind(row["kind"]),
                strength=row["strength"],
                reasoning=row["reasoning"],
                created_at=_dt(row["created_at"]),
            )
            for row in rows
        ]

    async def delete_belief(self, tenant: str, uid: str) -> bool:
        rows = await self._write(_DELETE_BELIEF, tenant=tenant, uid=uid)
        return bool(rows[0]["deleted"])

    # ---- facts

    async def _insert_fact(self, tx: AsyncTransaction, fact: Fact) -> Fact:
        params = {"uid": fact.uid, "tenant": fact.tenant, "props": _fact_props(fact)}
        rows = await _rows(tx, _ADD_FACT, params)
        if not rows:
            raise StoreError(
                f"fact uid {fact.uid!r} is already taken by another fact; "
                "give each new fact a fresh uid"
            )
        return _fact(rows[0]["f"])

    async def add_fact(self, fact: Fact, episode_uid: str | None = None) -> Fact:
        async def work(tx: AsyncTransaction) -> Fact:
            stored = await self._insert_fact(tx, fact)
            if episode_uid is not None:
                params = {"tenant": fact.tenant, "fact": fact.uid, "episode": episode_uid}
                await _exec(tx, _CITE_FACT, params)
            return stored

        return await self._tx(work)

    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        await self._write(_CITE_FACT, tenant=tenant, fact=fact_uid, episode=episode_uid)

    async def supersede_fact(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
        if new.tenant != tenant:
            raise ValueError("the superseding fact must belong to the same tenant")
        if new.uid == old_uid:
            raise ValueError("a fact cannot supersede itself; give the new fact a fresh uid")

        async def work(tx: AsyncTransaction) -> Fact:
            if not await _rows(tx, _GET_FACT, {"tenant": tenant, "uid": old_uid}):
                raise NotFound(f"no fact {old_uid!r} for this tenant; nothing to supersede")
            stored = await self._insert_fact(tx, new)
            params = {"tenant": tenant, "uid": old_uid, "at": as_utc(at), "by": new.uid}
            await _exec(tx, _CLOSE_FACT, params)
            return stored

        return await self._tx(work)

    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        rows = await self._read(_GET_FACT, tenant=tenant, uid=uid)
        return _fact(rows[0]["f"]) if rows else None

    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        rows = await self._read(_LIST_FACTS, tenant=tenant, all=include_superseded)
        return [_fact(row["f"]) for row in rows]

    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        rows = await self._read(_FACT_SOURCES, tenant=tenant, uid=fact_uid)
        return sorted(row["uid"] for row in rows)

    # ---- personality snapshots

    async def add_snapshot(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        rows = await self._write(_ADD_SNAPSHOT, tenant=tenant, text=clean_text(text), at=as_utc(at))
        return _snapshot(rows[0]["s"])

    async def current_snapshot(self, tenant: str) -> PersonalitySnapshot | None:
        rows = await self._read(_SNAPSHOTS, tenant=tenant, limit=1)
        return _snapshot(rows[0]["s"]) if rows else None

    async def snapshot_history(self, tenant: str) -> list[PersonalitySnapshot]:
        rows = await self._read(_SNAPSHOTS, tenant=tenant, limit=2**62)
        return [_snapshot(row["s"]) for row in rows]

    # ---- per-tenant state

    async def get_tenant_state(self, tenant: str, key: str) -> str | None:
        rows = await self._read(_GET_STATE, tenant=clean_text(tenant), key=clean_text(key))
        return str(rows[0]["value"]) if rows else None

    async def put_tenant_state(self, tenant: str, key: str, value: str) -> None:
        await self._write(
            _PUT_STATE, tenant=clean_text(tenant), key=clean_text(key), value=clean_text(value)
        )
