"""The embedded graph store: one SQLite file, the default when no Neo4j is configured.

Tables mirror the graph (`schema.SQLITE_SCHEMA`): nodes are rows, edges are tables keyed by both
ends, and traversals are recursive CTEs. This module owns the connection, its worker thread and
the async API; the SQL lives here and in `sqlite_tx` (the multi-statement transactions). Every
value is bound as a parameter. It knows nothing of LangGraph, vectors or scoring.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from memory.schema import (
    ESS,
    SCHEMA_VERSION,
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
    clean_text,
    entity_key,
    utcnow,
)
from memory.settings import Settings
from memory.stores import sqlite_tx as tx
from memory.stores.base import CreateResult, GraphStore, StoreError, StoreUnavailable

P = ParamSpec("P")
T = TypeVar("T")
Conn = sqlite3.Connection

BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another process's transaction before the store reports it locked."""

# Errors that mean "the file cannot be used right now", as opposed to a bug in a query.
_UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_CORRUPT,
    }
)


# --------------------------------------------------------------------------- the store


class SqliteGraphStore(GraphStore):
    """GraphStore over one SQLite file (WAL, foreign keys), shareable by several processes."""

    backend = "sqlite"

    # Why stdlib sqlite3 on one worker thread rather than aiosqlite: each operation (a whole
    # transaction) is one call on the thread that owns the connection, so no other coroutine can
    # slip statements into an open transaction, an operation costs one thread hop instead of one
    # per statement, and a cancelled caller cannot leave a transaction half-open (the call still
    # finishes, committing or rolling back, on the worker).

    def __init__(self, path: str | Path, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path).expanduser()
        self._busy_timeout_s = busy_timeout_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mneme-sqlite")
        self._conn: Conn | None = None  # owned by the worker thread
        self._schema_ready = False  # read and written on the worker thread only
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings) -> SqliteGraphStore:
        """The store at `settings.resolved_sqlite_path`, creating its directory."""
        path = settings.resolved_sqlite_path.expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(_cannot_open(path, exc)) from None
        return cls(path)

    # ---- plumbing

    def _connection(self) -> Conn:
        if self._conn is None:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s, isolation_level=None)
            try:
                conn.row_factory = sqlite3.Row
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute("PRAGMA journal_mode = WAL")
                # FULL: a commit survives power loss, not only a process crash. Measured on the
                # dev VM (ext4, busy 2-core box, 1000 calls): create_episode p50 2.5-3.9 ms, p95
                # 5.6-10 ms with FULL, vs p50 0.3 ms with NORMAL. FULL fits the ~5 ms p50 budget.
                conn.execute("PRAGMA synchronous = FULL")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _on_worker(self, lazy_setup: bool, fn: Callable[..., T], args: tuple[object, ...]) -> T:
        conn = self._connection()
        if lazy_setup and not self._schema_ready:
            # Applied on first use too (DESIGN 4); a file already at this version costs one read.
            if tx.schema_version(conn) != SCHEMA_VERSION:
                tx.setup(conn, self.path)
            self._schema_ready = True
        return fn(conn, *args)

    async def _call(self, lazy_setup: bool, fn: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise StoreError(f"the SQLite graph store at {self.path} is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor, partial(self._on_worker, lazy_setup, fn, args)
            )
        except sqlite3.Error as exc:
            if _primary_code(exc) in _UNAVAILABLE_CODES:
                raise self._unavailable(exc) from exc
            raise

    async def _run(
        self, fn: Callable[Concatenate[Conn, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await self._call(True, partial(fn, **kwargs), *args)

    async def _fetch(self, sql: str, params: tx.Params) -> list[sqlite3.Row]:
        return await self._run(tx.fetch, sql, params)

    async def _write(self, sql: str, params: tx.Params) -> int:
        return await self._run(tx.write, sql, params)

    def _unavailable(self, exc: sqlite3.Error) -> StoreUnavailable:
        code = _primary_code(exc)
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreUnavailable(
                f"the SQLite graph file {self.path} stayed locked by another process for more "
                f"than {self._busy_timeout_s:g} s ({exc}); wait for that process, or stop it"
            )
        if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
            return StoreUnavailable(
                f"{self.path} is not a usable SQLite database ({exc}); move it aside, or set "
                "MNEME_SQLITE_PATH to another file"
            )
        return StoreUnavailable(_cannot_open(self.path, exc))

    # ---- lifecycle

    async def setup(self) -> None:
        """Create tables and indexes and record the schema version; idempotent, multi-process safe."""
        await self._call(False, self._setup_on_worker)

    def _setup_on_worker(self, conn: Conn) -> None:
        tx.setup(conn, self.path)
        self._schema_ready = True

    async def schema_version(self) -> int | None:
        """The schema version recorded in the file, or None before setup."""
        return await self._call(False, tx.schema_version)

    async def ping(self) -> None:
        """Raise `StoreUnavailable` (with the fix) unless the file can be opened for writing."""
        await self._call(False, tx.ping)

    async def close(self) -> None:
        """Close the connection and stop the worker thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_on_worker)
        self._executor.shutdown(wait=False)

    def _close_on_worker(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _wipe_for_tests(self) -> None:
        """Delete every row but keep the schema (the contract suite calls it between tests)."""
        await self._run(tx.wipe)

    # ---- episodes

    async def create_episode(self, episode: NewEpisode) -> CreateResult:
        return await self._run(tx.create_episode, episode)

    async def get_episode(self, tenant: str, uid: str) -> Episode | None:
        rows = await self._fetch(tx.Q_EPISODE, (uid, tenant))
        return tx.episode_of(rows[0]) if rows else None

    async def get_episodes(self, tenant: str, uids: Sequence[str]) -> list[Episode]:
        rows = await self._fetch(
            "SELECT e.* FROM json_each(?) j JOIN episodes e ON e.uid = j.value AND e.tenant = ? "
            "ORDER BY j.key",
            (tx.json_list(uids), tenant),
        )
        return [tx.episode_of(r) for r in rows]

    async def find_episodes_by_prefix(
        self, tenant: str, prefix: str, limit: int = 10
    ) -> list[Episode]:
        # substr() compares characters literally, unlike LIKE/GLOB where % _ * ? are patterns.
        rows = await self._fetch(
            "SELECT * FROM episodes WHERE tenant = ? AND substr(uid, 1, ?) = ? ORDER BY uid LIMIT ?",
            (tenant, len(prefix), prefix, tx.nonneg("limit", limit)),
        )
        return [tx.episode_of(r) for r in rows]

    async def temporal_neighbours(self, tenant: str, uid: str, k: int) -> list[Neighbour]:
        rows = await self._fetch(
            tx.Q_NEIGHBOURS, {"tenant": tenant, "uid": uid, "k": tx.nonneg("k", k)}
        )
        return [Neighbour(offset=r["off"], episode=tx.episode_of(r)) for r in rows]

    async def set_status(
        self, tenant: str, uid: str, status: EpisodeStatus, *, only_forward: bool = True
    ) -> bool:
        return await self._run(tx.set_status, tenant, uid, EpisodeStatus(status), only_forward)

    async def list_by_status(
        self, tenant: str | None, statuses: Sequence[EpisodeStatus], limit: int = 1000
    ) -> list[Episode]:
        wanted = tx.json_list([EpisodeStatus(s).value for s in statuses])
        if tenant is None:
            sql = (
                "SELECT * FROM episodes WHERE status IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, uid LIMIT ?"
            )
            params: tuple[object, ...] = (wanted, tx.nonneg("limit", limit))
        else:
            sql = (
                "SELECT * FROM episodes WHERE tenant = ? AND status IN "
                "(SELECT value FROM json_each(?)) ORDER BY created_at, uid LIMIT ?"
            )
            params = (tenant, wanted, tx.nonneg("limit", limit))
        return [tx.episode_of(r) for r in await self._fetch(sql, params)]

    async def list_episode_uids(self, tenant: str | None) -> list[str]:
        if tenant is None:
            rows = await self._fetch("SELECT uid FROM episodes ORDER BY uid", ())
        else:
            rows = await self._fetch(
                "SELECT uid FROM episodes WHERE tenant = ? ORDER BY uid", (tenant,)
            )
        return [r[0] for r in rows]

    async def list_tenants(self) -> list[str]:
        rows = await self._fetch("SELECT DISTINCT tenant FROM episodes ORDER BY tenant", ())
        return [r[0] for r in rows]

    async def record_access(self, tenant: str, uids: Sequence[str], at: datetime) -> None:
        # Each distinct uid counts once per call, however often it appears in `uids`.
        await self._write(
            "UPDATE episodes SET access_count = access_count + 1, last_accessed = ? "
            "WHERE tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tx.ts(at), tenant, tx.json_list(uids)),
        )

    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        await self._write(
            "UPDATE episodes SET ess = ? WHERE uid = ? AND tenant = ?",
            (ess.model_dump_json(), uid, tenant),
        )

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
            "UPDATE episodes SET salience = COALESCE(?, salience), "
            "utility_score = COALESCE(?, utility_score), archived = COALESCE(?, archived) "
            "WHERE uid = ? AND tenant = ?",
            (salience, utility_score, None if archived is None else int(archived), uid, tenant),
        )

    async def delete_episode(self, tenant: str, uid: str) -> bool:
        return await self._run(tx.delete_episode, tenant, uid)

    async def count_episodes(self, tenant: str) -> int:
        rows = await self._fetch("SELECT COUNT(*) FROM episodes WHERE tenant = ?", (tenant,))
        return int(rows[0][0])

    # ---- topics

    async def link_topics(self, tenant: str, episode_uid: str, slugs: Sequence[str]) -> None:
        cleaned = list(dict.fromkeys(clean_text(s) for s in slugs))
        await self._run(tx.link_topics, tenant, episode_uid, cleaned)

    async def episode_topics(self, tenant: str, episode_uid: str) -> list[str]:
        rows = await self._fetch(
            "SELECT slug FROM discusses WHERE episode_uid = ? AND tenant = ? ORDER BY slug",
            (episode_uid, tenant),
        )
        return [r[0] for r in rows]

    async def episodes_for_topic(self, tenant: str, slug: str, limit: int = 50) -> list[str]:
        rows = await self._fetch(
            "SELECT e.uid FROM discusses d JOIN episodes e ON e.uid = d.episode_uid "
            "WHERE d.tenant = ? AND d.slug = ? ORDER BY e.created_at DESC, e.uid LIMIT ?",
            (tenant, clean_text(slug), tx.nonneg("limit", limit)),
        )
        return [r[0] for r in rows]

    # ---- entities

    async def upsert_entity(self, tenant: str, name: str, type: EntityType) -> Entity:
        name = clean_text(name)
        key = entity_key(name)
        if not key:
            raise ValueError("an entity needs a non-empty name")
        return await self._run(tx.upsert_entity, tenant, key, name, EntityType(type))

    async def link_mentions(self, tenant: str, episode_uid: str, names: Sequence[str]) -> None:
        keys = tx.json_list([entity_key(clean_text(n)) for n in names])
        await self._run(tx.link_mentions, tenant, episode_uid, keys)

    async def relate_entities(self, tenant: str, a: str, b: str, relation: str = "related") -> None:
        await self._write(
            "INSERT INTO related_to (tenant, src_key, dst_key, relation) "
            "SELECT :tenant, x.key, y.key, :relation FROM entities x JOIN entities y "
            "ON y.tenant = :tenant AND y.key = :b WHERE x.tenant = :tenant AND x.key = :a "
            "ON CONFLICT (tenant, src_key, dst_key) DO UPDATE SET relation = excluded.relation",
            {
                "tenant": tenant,
                "a": entity_key(clean_text(a)),
                "b": entity_key(clean_text(b)),
                "relation": clean_text(relation),
            },
        )

    async def get_entity(self, tenant: str, name: str) -> Entity | None:
        rows = await self._fetch(
            "SELECT * FROM entities WHERE tenant = ? AND key = ?",
            (tenant, entity_key(clean_text(name))),
        )
        return tx.entity_of(rows[0]) if rows else None

    async def list_entities(self, tenant: str) -> list[Entity]:
        rows = await self._fetch("SELECT * FROM entities WHERE tenant = ? ORDER BY key", (tenant,))
        return [tx.entity_of(r) for r in rows]

    def _walk_params(self, tenant: str, names: Sequence[str], hops: int) -> dict[str, object]:
        seeds = tx.json_list([entity_key(clean_text(n)) for n in names])
        return {"tenant": tenant, "seeds": seeds, "hops": tx.nonneg("hops", hops)}

    async def entity_neighbourhood(
        self, tenant: str, names: Sequence[str], hops: int
    ) -> list[EntityHit]:
        rows = await self._fetch(tx.Q_NEIGHBOURHOOD, self._walk_params(tenant, names, hops))
        return [EntityHit(entity=tx.entity_of(r), distance=r["d"]) for r in rows]

    async def episodes_near_entities(
        self, tenant: str, names: Sequence[str], hops: int, limit: int = 50
    ) -> list[EpisodeHit]:
        params = self._walk_params(tenant, names, hops) | {"limit": tx.nonneg("limit", limit)}
        rows = await self._fetch(tx.Q_NEAR_EPISODES, params)
        return [EpisodeHit(episode_uid=r["uid"], distance=r["d"]) for r in rows]

    async def episode_entities(self, tenant: str, episode_uid: str) -> list[Entity]:
        rows = await self._fetch(
            "SELECT e.* FROM mentions m JOIN entities e ON e.tenant = m.tenant AND e.key = "
            "m.entity_key WHERE m.episode_uid = ? AND m.tenant = ? ORDER BY e.key",
            (episode_uid, tenant),
        )
        return [tx.entity_of(r) for r in rows]

    # ---- beliefs

    async def upsert_belief(self, belief: Belief) -> Belief:
        return await self._run(tx.upsert_belief, belief)

    async def get_belief(self, tenant: str, uid: str) -> Belief | None:
        rows = await self._fetch(
            "SELECT * FROM beliefs WHERE uid = ? AND tenant = ?", (uid, tenant)
        )
        return tx.belief_of(rows[0]) if rows else None

    async def get_belief_by_topic(self, tenant: str, topic: str) -> Belief | None:
        rows = await self._fetch(
            "SELECT * FROM beliefs WHERE tenant = ? AND topic = ?",
            (tenant, clean_text(topic)),
        )
        return tx.belief_of(rows[0]) if rows else None

    async def list_beliefs(self, tenant: str) -> list[Belief]:
        rows = await self._fetch("SELECT * FROM beliefs WHERE tenant = ? ORDER BY topic", (tenant,))
        return [tx.belief_of(r) for r in rows]

    async def add_evidence(
        self,
        tenant: str,
        episode_uid: str,
        belief_uid: str,
        kind: EvidenceKind,
        strength: float,
        reasoning: str = "",
    ) -> bool:
        evidence = Evidence(
            episode_uid=episode_uid,
            belief_uid=belief_uid,
            kind=kind,
            strength=strength,
            reasoning=clean_text(reasoning),
            created_at=utcnow(),
        )
        return await self._run(tx.add_evidence, tenant, evidence)

    async def belief_evidence(
        self, tenant: str, belief_uid: str, limit: int = 20
    ) -> list[Evidence]:
        rows = await self._fetch(
            "SELECT * FROM evidence WHERE belief_uid = ? AND tenant = ? "
            "ORDER BY strength DESC, episode_uid LIMIT ?",
            (belief_uid, tenant, tx.nonneg("limit", limit)),
        )
        return [
            Evidence(
                episode_uid=r["episode_uid"],
                belief_uid=r["belief_uid"],
                kind=EvidenceKind(r["kind"]),
                strength=r["strength"],
                reasoning=r["reasoning"],
                created_at=tx.dt(r["created_at"]),
            )
            for r in rows
        ]

    async def delete_belief(self, tenant: str, uid: str) -> bool:
        deleted = await self._write(
            "DELETE FROM beliefs WHERE uid = ? AND tenant = ?", (uid, tenant)
        )
        return deleted > 0

    # ---- facts

    async def add_fact(self, fact: Fact, episode_uid: str | None = None) -> Fact:
        return await self._run(tx.add_fact, fact, episode_uid)

    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        await self._run(tx.cite_fact, tenant, fact_uid, episode_uid)

    async def supersede_fact(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
        if new.tenant != tenant:
            raise ValueError("the superseding fact must belong to the same tenant")
        if new.uid == old_uid:
            raise ValueError("a fact cannot supersede itself; give the new fact a fresh uid")
        return await self._run(tx.supersede_fact, tenant, old_uid, new, at)

    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        rows = await self._fetch(tx.Q_FACT, (uid, tenant))
        return tx.fact_of(rows[0]) if rows else None

    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        rows = await self._fetch(
            "SELECT * FROM facts WHERE tenant = ? AND (? OR superseded_by IS NULL) "
            "ORDER BY valid_from, uid",
            (tenant, int(include_superseded)),
        )
        return [tx.fact_of(r) for r in rows]

    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        rows = await self._fetch(
            "SELECT episode_uid FROM states WHERE fact_uid = ? AND tenant = ? ORDER BY episode_uid",
            (fact_uid, tenant),
        )
        return [r[0] for r in rows]

    # ---- personality snapshots

    async def add_snapshot(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        return await self._run(tx.add_snapshot, tenant, clean_text(text), tx.ts(at))

    async def current_snapshot(self, tenant: str) -> PersonalitySnapshot | None:
        rows = await self._fetch(
            "SELECT * FROM snapshots WHERE tenant = ? ORDER BY version DESC LIMIT 1",
            (tenant,),
        )
        return tx.snapshot_of(rows[0]) if rows else None

    async def snapshot_history(self, tenant: str) -> list[PersonalitySnapshot]:
        rows = await self._fetch(
            "SELECT * FROM snapshots WHERE tenant = ? ORDER BY version DESC", (tenant,)
        )
        return [tx.snapshot_of(r) for r in rows]

    # ---- per-tenant state

    async def get_tenant_state(self, tenant: str, key: str) -> str | None:
        rows = await self._fetch(
            "SELECT value FROM tenant_state WHERE tenant = ? AND key = ?",
            (clean_text(tenant), clean_text(key)),
        )
        return str(rows[0]["value"]) if rows else None

    async def put_tenant_state(self, tenant: str, key: str, value: str) -> None:
        await self._write(
            "INSERT INTO tenant_state (tenant, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
            (clean_text(tenant), clean_text(key), clean_text(value)),
        )


def _cannot_open(path: Path, exc: BaseException) -> str:
    return (
        f"cannot open the SQLite graph file {path} ({exc}); make sure its directory exists and is "
        "writable, or set MNEME_SQLITE_PATH (or MNEME_DATA_DIR) to a writable location"
    )


def _primary_code(exc: sqlite3.Error) -> int:
    # Errors raised by the sqlite3 module itself (not by SQLite) carry no code.
    code: int = getattr(exc, "sqlite_errorcode", 0) or 0
    return code & 0xFF
