"""The SQL of the SQLite graph store: transactions and queries run on its worker thread.

`memory.stores.sqlite` owns the connection and the async API; this module holds what runs on the
connection: each function takes it first and is either one statement or one `BEGIN IMMEDIATE`
transaction. Every value is bound as a parameter; nothing here splices input into SQL.

Datetimes are stored as fixed-width ISO-8601 UTC strings (`2024-05-01T12:00:00.000000+00:00`), so
that string order is time order and indexes on them sort chronologically.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from memory.schema import (
    ESS,
    SCHEMA_VERSION,
    SQLITE_SCHEMA,
    STATUS_ORDER,
    Belief,
    Entity,
    EntityType,
    Episode,
    EpisodeStatus,
    Evidence,
    Fact,
    NewEpisode,
    PersonalitySnapshot,
    as_utc,
    clean_text,
    content_hash,
    episode_content,
)
from memory.stores.base import CreateResult, NotFound, SchemaMismatch, StoreError

Conn = sqlite3.Connection
Params = Sequence[object] | dict[str, object]


def ts(value: datetime) -> str:
    """A datetime as stored: fixed-width ISO-8601 in UTC (naive means UTC)."""
    return as_utc(value).isoformat(timespec="microseconds")


def dt(value: str) -> datetime:
    """A stored datetime back as an aware UTC datetime."""
    return datetime.fromisoformat(value)


def dt_opt(value: str | None) -> datetime | None:
    """Like `dt`, passing None through."""
    return None if value is None else datetime.fromisoformat(value)


def json_list(values: Sequence[str]) -> str:
    """A list of strings as one JSON parameter, read in SQL with json_each()."""
    # Lists travel as one JSON parameter read back with json_each(), so no query is ever built
    # from the number of values.
    return json.dumps(list(values), ensure_ascii=False)


def nonneg(name: str, value: int) -> int:
    """Check that a count (k, hops, limit) is a non-negative int; SQLite reads LIMIT -1 as no limit."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


@contextmanager
def immediate(conn: Conn) -> Iterator[None]:
    """One write transaction, taking the write lock up front so that reads inside it stay valid."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def episode_of(row: sqlite3.Row) -> Episode:
    """An episode row as a record."""
    ess = row["ess"]
    return Episode(
        uid=row["uid"],
        tenant=row["tenant"],
        thread_id=row["thread_id"],
        content=row["content"],
        user_text=row["user_text"],
        agent_text=row["agent_text"],
        created_at=dt(row["created_at"]),
        last_accessed=dt_opt(row["last_accessed"]),
        access_count=row["access_count"],
        ess=None if ess is None else ESS.model_validate_json(ess),
        status=EpisodeStatus(row["status"]),
        archived=bool(row["archived"]),
        utility_score=row["utility_score"],
        salience=row["salience"],
        content_hash=row["content_hash"],
    )


def entity_of(row: sqlite3.Row) -> Entity:
    """An entity row as a record."""
    return Entity(tenant=row["tenant"], name=row["name"], type=EntityType(row["type"]))


def belief_of(row: sqlite3.Row) -> Belief:
    """A belief row as a record."""
    return Belief(
        uid=row["uid"],
        tenant=row["tenant"],
        topic=row["topic"],
        statement=row["statement"],
        valence=row["valence"],
        confidence=row["confidence"],
        evidence_count=row["evidence_count"],
        contested=bool(row["contested"]),
        updated_at=dt(row["updated_at"]),
    )


def fact_of(row: sqlite3.Row) -> Fact:
    """A fact row as a record."""
    return Fact(
        uid=row["uid"],
        tenant=row["tenant"],
        text=row["text"],
        confidence=row["confidence"],
        valid_from=dt(row["valid_from"]),
        valid_to=dt_opt(row["valid_to"]),
        superseded_by=row["superseded_by"],
    )


def snapshot_of(row: sqlite3.Row) -> PersonalitySnapshot:
    """A snapshot row as a record."""
    return PersonalitySnapshot(
        tenant=row["tenant"],
        version=row["version"],
        text=row["text"],
        created_at=dt(row["created_at"]),
    )


# --------------------------------------------------------------------------- queries and transactions

Q_EPISODE = "SELECT * FROM episodes WHERE uid = ? AND tenant = ?"
Q_FACT = "SELECT * FROM facts WHERE uid = ? AND tenant = ?"

# Entities within :hops RELATED_TO hops of the seeds, either direction (one recursive step per
# direction, so each uses an index); UNION (not UNION ALL) drops repeated (key, d) pairs, so
# cycles cannot make the walk grow past nodes x hops.
_WALK = """
WITH RECURSIVE walk(key, d) AS (
    SELECT key, 0 FROM entities
    WHERE tenant = :tenant AND key IN (SELECT value FROM json_each(:seeds))
    UNION
    SELECT r.dst_key, w.d + 1 FROM walk w
    JOIN related_to r ON r.tenant = :tenant AND r.src_key = w.key WHERE w.d < :hops
    UNION
    SELECT r.src_key, w.d + 1 FROM walk w
    JOIN related_to r ON r.tenant = :tenant AND r.dst_key = w.key WHERE w.d < :hops
),
near(key, d) AS (SELECT key, MIN(d) FROM walk GROUP BY key)
"""
Q_NEIGHBOURHOOD = (
    _WALK  # noqa: S608 - constant SQL fragments only; every value is a bound parameter
    + """SELECT e.*, n.d FROM near n JOIN entities e ON e.tenant = :tenant AND e.key = n.key
    ORDER BY n.d, e.key"""
)
Q_NEAR_EPISODES = (
    _WALK  # noqa: S608 - constant SQL fragments only; every value is a bound parameter
    + """SELECT ep.uid, MIN(n.d) AS d, ep.created_at
    FROM near n
    CROSS JOIN mentions m ON m.tenant = :tenant AND m.entity_key = n.key
    JOIN episodes ep ON ep.uid = m.episode_uid AND ep.tenant = :tenant
    GROUP BY ep.uid
    ORDER BY d, ep.created_at DESC, ep.uid
    LIMIT :limit"""
)

Q_NEIGHBOURS = """
WITH RECURSIVE
fwd(uid, off) AS (
    SELECT dst, 1 FROM temporal_next WHERE src = :uid AND tenant = :tenant AND :k > 0
    UNION ALL
    SELECT t.dst, f.off + 1 FROM fwd f JOIN temporal_next t ON t.src = f.uid WHERE f.off < :k
),
bwd(uid, off) AS (
    SELECT src, -1 FROM temporal_next WHERE dst = :uid AND tenant = :tenant AND :k > 0
    UNION ALL
    SELECT t.src, b.off - 1 FROM bwd b JOIN temporal_next t ON t.dst = b.uid WHERE b.off > -:k
)
SELECT n.off, e.* FROM (SELECT * FROM bwd UNION ALL SELECT * FROM fwd) n
JOIN episodes e ON e.uid = n.uid AND e.tenant = :tenant
ORDER BY n.off
"""


def schema_version(conn: Conn) -> int | None:
    """The schema version recorded in the file, or None before setup."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not has_meta:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else int(row[0])


def setup(conn: Conn, path: Path) -> None:
    """Apply the schema and record its version in one transaction; refuse a newer file."""
    with immediate(conn):
        found = schema_version(conn)
        if found is not None and found > SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the SQLite graph file {path} holds schema version {found}, newer than this "
                f"mneme's {SCHEMA_VERSION}; upgrade mneme, or set MNEME_SQLITE_PATH to another file"
            )
        # Older versions: migrations go here when version 2 exists; version 1 is the first.
        for ddl in SQLITE_SCHEMA:
            conn.execute(ddl)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )


def ping(conn: Conn) -> None:
    """Take and release the write lock: proves the file and its directory are writable."""
    # Taking the write lock proves the file and its directory are writable, and writes nothing.
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ROLLBACK")


def create_episode(conn: Conn, ep: NewEpisode) -> CreateResult:
    """Insert an episode and splice it into its tenant's chain, unless it is a duplicate."""
    user_text, agent_text = clean_text(ep.user_text), clean_text(ep.agent_text)
    content = episode_content(user_text, agent_text)
    digest = content_hash(content)
    key = {"tenant": ep.tenant, "created_at": ts(ep.created_at), "uid": ep.uid}
    with immediate(conn):
        row = conn.execute(
            "SELECT uid FROM episodes WHERE tenant = ? AND content_hash = ?", (ep.tenant, digest)
        ).fetchone()
        if row is not None:
            return CreateResult(uid=row[0], duplicate=True)
        # The chain is ordered by (created_at, uid): splice between the greatest smaller key and
        # the smallest greater key (usually: append after the tail).
        pred = conn.execute(
            "SELECT uid FROM episodes WHERE tenant = :tenant AND (created_at, uid) < "
            "(:created_at, :uid) ORDER BY created_at DESC, uid DESC LIMIT 1",
            key,
        ).fetchone()
        succ = conn.execute(
            "SELECT uid FROM episodes WHERE tenant = :tenant AND (created_at, uid) > "
            "(:created_at, :uid) ORDER BY created_at, uid LIMIT 1",
            key,
        ).fetchone()
        try:
            conn.execute(
                "INSERT INTO episodes (uid, tenant, thread_id, content, user_text, agent_text, "
                "created_at, ess, status, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ep.uid,
                    ep.tenant,
                    clean_text(ep.thread_id),
                    content,
                    user_text,
                    agent_text,
                    key["created_at"],
                    None if ep.ess is None else ep.ess.model_dump_json(),
                    ep.status.value,
                    digest,
                ),
            )
        except sqlite3.IntegrityError:
            raise StoreError(
                f"episode uid {ep.uid!r} is already taken by another episode; "
                "give each new episode a fresh uid"
            ) from None
        if pred is not None and succ is not None:
            conn.execute("DELETE FROM temporal_next WHERE src = ? AND dst = ?", (pred[0], succ[0]))
        link = "INSERT INTO temporal_next (tenant, src, dst) VALUES (?, ?, ?)"
        if pred is not None:
            conn.execute(link, (ep.tenant, pred[0], ep.uid))
        if succ is not None:
            conn.execute(link, (ep.tenant, ep.uid, succ[0]))
    return CreateResult(uid=ep.uid, duplicate=False)


def delete_episode(conn: Conn, tenant: str, uid: str) -> bool:
    """Delete an episode and its edges, linking its chain neighbours to each other."""
    with immediate(conn):
        if conn.execute(Q_EPISODE, (uid, tenant)).fetchone() is None:
            return False
        pred = conn.execute("SELECT src FROM temporal_next WHERE dst = ?", (uid,)).fetchone()
        succ = conn.execute("SELECT dst FROM temporal_next WHERE src = ?", (uid,)).fetchone()
        # ON DELETE CASCADE removes every edge of the episode (chain, topics, mentions, evidence,
        # citations); topics, entities, beliefs and facts themselves stay.
        conn.execute("DELETE FROM episodes WHERE uid = ?", (uid,))
        if pred is not None and succ is not None:
            conn.execute(
                "INSERT INTO temporal_next (tenant, src, dst) VALUES (?, ?, ?)",
                (tenant, pred[0], succ[0]),
            )
    return True


def set_status(conn: Conn, tenant: str, uid: str, status: EpisodeStatus, forward: bool) -> bool:
    """Move an episode to `status` (forward only when `forward`); True if it changed."""
    with immediate(conn):
        row = conn.execute(
            "SELECT status FROM episodes WHERE uid = ? AND tenant = ?", (uid, tenant)
        ).fetchone()
        if row is None:
            return False
        current = EpisodeStatus(row[0])
        if current == status or (forward and STATUS_ORDER[status] < STATUS_ORDER[current]):
            return False
        conn.execute("UPDATE episodes SET status = ? WHERE uid = ?", (status.value, uid))
    return True


def episode_exists(conn: Conn, tenant: str, uid: str) -> bool:
    """True if the tenant has an episode with this uid."""
    row = conn.execute("SELECT 1 FROM episodes WHERE uid = ? AND tenant = ?", (uid, tenant))
    return row.fetchone() is not None


def link_topics(conn: Conn, tenant: str, uid: str, slugs: list[str]) -> None:
    """MERGE topics and DISCUSSES edges from an existing episode."""
    with immediate(conn):
        if not episode_exists(conn, tenant, uid):
            return
        for slug in slugs:
            conn.execute(
                "INSERT OR IGNORE INTO topics (tenant, slug) VALUES (?, ?)", (tenant, slug)
            )
            conn.execute(
                "INSERT OR IGNORE INTO discusses (episode_uid, tenant, slug) VALUES (?, ?, ?)",
                (uid, tenant, slug),
            )


def upsert_entity(conn: Conn, tenant: str, key: str, name: str, type: EntityType) -> Entity:
    """Create or update an entity by key and return it."""
    with immediate(conn):
        # The first spelling of the name stays the display name; the latest type wins.
        conn.execute(
            "INSERT INTO entities (tenant, key, name, type) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (tenant, key) DO UPDATE SET type = excluded.type",
            (tenant, key, name, type.value),
        )
        row = conn.execute(
            "SELECT * FROM entities WHERE tenant = ? AND key = ?", (tenant, key)
        ).fetchone()
    return entity_of(row)


def link_mentions(conn: Conn, tenant: str, uid: str, keys: str) -> None:
    """MENTIONS edges from an existing episode to the existing entities among `keys`."""
    with immediate(conn):
        if not episode_exists(conn, tenant, uid):
            return
        conn.execute(
            "INSERT OR IGNORE INTO mentions (episode_uid, tenant, entity_key) "
            "SELECT :uid, :tenant, key FROM entities "
            "WHERE tenant = :tenant AND key IN (SELECT value FROM json_each(:keys))",
            {"uid": uid, "tenant": tenant, "keys": keys},
        )


def upsert_belief(conn: Conn, b: Belief) -> Belief:
    """Insert a belief or replace the fields of the tenant's belief on its topic."""
    topic = clean_text(b.topic)
    with immediate(conn):
        try:
            conn.execute(
                "INSERT INTO beliefs (uid, tenant, topic, statement, valence, confidence, "
                "evidence_count, contested, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, topic) DO UPDATE SET statement = excluded.statement, "
                "valence = excluded.valence, confidence = excluded.confidence, "
                "evidence_count = excluded.evidence_count, contested = excluded.contested, "
                "updated_at = excluded.updated_at",
                (
                    b.uid,
                    b.tenant,
                    topic,
                    clean_text(b.statement),
                    b.valence,
                    b.confidence,
                    b.evidence_count,
                    int(b.contested),
                    ts(b.updated_at),
                ),
            )
        except sqlite3.IntegrityError:
            raise StoreError(
                f"belief uid {b.uid!r} is already taken by a belief on another topic; "
                "give each new belief a fresh uid"
            ) from None
        row = conn.execute(
            "SELECT * FROM beliefs WHERE tenant = ? AND topic = ?", (b.tenant, topic)
        ).fetchone()
    return belief_of(row)


def add_evidence(conn: Conn, tenant: str, ev: Evidence) -> bool:
    """Write a provenance edge once and count it on the belief; True if written."""
    with immediate(conn):
        belief = conn.execute(
            "SELECT 1 FROM beliefs WHERE uid = ? AND tenant = ?", (ev.belief_uid, tenant)
        ).fetchone()
        if belief is None or not episode_exists(conn, tenant, ev.episode_uid):
            return False
        written = conn.execute(
            "INSERT OR IGNORE INTO evidence (episode_uid, belief_uid, tenant, kind, strength, "
            "reasoning, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                ev.episode_uid,
                ev.belief_uid,
                tenant,
                ev.kind.value,
                ev.strength,
                ev.reasoning,
                ts(ev.created_at),
            ),
        ).rowcount
        if written:
            conn.execute(
                "UPDATE beliefs SET evidence_count = evidence_count + 1 WHERE uid = ?",
                (ev.belief_uid,),
            )
    return bool(written)


def _insert_fact(conn: Conn, fact: Fact) -> Fact:
    """Insert unless the uid exists (idempotent); the stored fact. Runs inside a transaction."""
    conn.execute(
        "INSERT OR IGNORE INTO facts (uid, tenant, text, confidence, valid_from, valid_to, "
        "superseded_by) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            fact.uid,
            fact.tenant,
            clean_text(fact.text),
            fact.confidence,
            ts(fact.valid_from),
            None if fact.valid_to is None else ts(fact.valid_to),
            fact.superseded_by,
        ),
    )
    row = conn.execute(Q_FACT, (fact.uid, fact.tenant)).fetchone()
    if row is None:
        raise StoreError(
            f"fact uid {fact.uid!r} is already taken by another fact; give each new fact a fresh uid"
        )
    return fact_of(row)


def _cite(conn: Conn, tenant: str, fact_uid: str, episode_uid: str) -> None:
    """A STATES edge if the episode is the tenant's (inside a transaction)."""
    if episode_exists(conn, tenant, episode_uid):
        conn.execute(
            "INSERT OR IGNORE INTO states (episode_uid, fact_uid, tenant) VALUES (?, ?, ?)",
            (episode_uid, fact_uid, tenant),
        )


def add_fact(conn: Conn, fact: Fact, episode_uid: str | None) -> Fact:
    """Store a fact (idempotent on uid) and, given an episode, its STATES edge."""
    with immediate(conn):
        stored = _insert_fact(conn, fact)
        if episode_uid is not None:
            _cite(conn, fact.tenant, fact.uid, episode_uid)
    return stored


def cite_fact(conn: Conn, tenant: str, fact_uid: str, episode_uid: str) -> None:
    """A STATES edge from an existing episode to an existing fact; idempotent."""
    with immediate(conn):
        if conn.execute(Q_FACT, (fact_uid, tenant)).fetchone() is not None:
            _cite(conn, tenant, fact_uid, episode_uid)


def supersede_fact(conn: Conn, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
    """Store `new` and close `old_uid` with it; `NotFound` if old is not the tenant's."""
    with immediate(conn):
        if conn.execute(Q_FACT, (old_uid, tenant)).fetchone() is None:
            raise NotFound(f"no fact {old_uid!r} for this tenant; nothing to supersede")
        stored = _insert_fact(conn, new)
        conn.execute(
            "UPDATE facts SET valid_to = ?, superseded_by = ? WHERE uid = ?",
            (ts(at), new.uid, old_uid),
        )
    return stored


def add_snapshot(conn: Conn, tenant: str, text: str, at: str) -> PersonalitySnapshot:
    """Store the next snapshot version of the tenant."""
    with immediate(conn):
        (version,) = conn.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM snapshots WHERE tenant = ?", (tenant,)
        ).fetchone()
        # PREVIOUS is implicit here: version n's previous is version n - 1 of the same tenant.
        conn.execute(
            "INSERT INTO snapshots (tenant, version, text, created_at) VALUES (?, ?, ?, ?)",
            (tenant, version, text, at),
        )
    return PersonalitySnapshot(tenant=tenant, version=version, text=text, created_at=dt(at))


def wipe(conn: Conn) -> None:
    """Delete every row of every table but `meta`."""
    with immediate(conn):
        for table in (
            "evidence", "states", "discusses", "mentions", "related_to", "temporal_next",
            "episodes", "topics", "entities", "beliefs", "facts", "snapshots", "tenant_state",
        ):  # fmt: skip
            conn.execute(f"DELETE FROM {table}")  # noqa: S608 - table names are constants above


def fetch(conn: Conn, sql: str, params: Params) -> list[sqlite3.Row]:
    """Run one read query."""
    return conn.execute(sql, params).fetchall()


def write(conn: Conn, sql: str, params: Params) -> int:
    """Run one write statement in its own transaction; the number of rows changed."""
    with immediate(conn):
        return conn.execute(sql, params).rowcount
