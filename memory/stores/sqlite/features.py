"""Semantic features and SHOWS edges on SQLite: their tables, index and SQL."""

from __future__ import annotations

import sqlite3

from memory.schema import Feature, FeatureCategory
from memory.stores.errors import uid_taken
from memory.stores.graph.features import FeatureStore
from memory.stores.sqlite.connection import Conn, episode_exists, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import columns, from_row, insert_sql, json_list, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS features (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        category TEXT NOT NULL,
        text TEXT NOT NULL,
        strength REAL NOT NULL,
        evidence_count INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS features_tenant ON features (tenant, category, created_at)",
    """CREATE TABLE IF NOT EXISTS shows (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        feature_uid TEXT NOT NULL REFERENCES features(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (episode_uid, feature_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS shows_feature ON shows (feature_uid)",
)

_Q_FEATURE = "SELECT * FROM features WHERE uid = ? AND tenant = ?"
# Replacing a feature sets every field but its identity (uid, tenant).
_UPSERT = (
    insert_sql("features", Feature)
    + " ON CONFLICT (uid) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in columns(Feature) if c not in ("uid", "tenant"))
    + " WHERE features.tenant = excluded.tenant"
)


def feature_of(row: sqlite3.Row) -> Feature:
    """A feature row as a record."""
    return from_row(Feature, row)


def _upsert(conn: Conn, feature: Feature, episode_uid: str | None) -> Feature:
    with immediate(conn):
        conn.execute(_UPSERT, to_row(feature))
        row = conn.execute(_Q_FEATURE, (feature.uid, feature.tenant)).fetchone()
        if row is None:
            raise uid_taken("feature", feature.uid)
        if episode_uid is not None and episode_exists(conn, feature.tenant, episode_uid):
            conn.execute(
                "INSERT OR IGNORE INTO shows (episode_uid, feature_uid, tenant) VALUES (?, ?, ?)",
                (episode_uid, feature.uid, feature.tenant),
            )
    return feature_of(row)


class SqliteFeatures(SqliteKind, FeatureStore):
    """The feature part of `SqliteGraphStore`."""

    async def _upsert(self, feature: Feature, episode_uid: str | None) -> Feature:
        return await self._run(_upsert, feature, episode_uid)

    async def get(self, tenant: str, uid: str) -> Feature | None:
        """The feature with this uid, or None."""
        rows = await self._fetch(_Q_FEATURE, (uid, tenant))
        return feature_of(rows[0]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Feature]:
        rows = await self._fetch(
            "SELECT * FROM features WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tenant, json_list(uids)),
        )
        return [feature_of(r) for r in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the feature and its SHOWS edges; False if it did not exist."""
        return (
            await self._write("DELETE FROM features WHERE uid = ? AND tenant = ?", (uid, tenant))
            > 0
        )

    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes that showed the feature, sorted."""
        rows = await self._fetch(
            "SELECT episode_uid FROM shows WHERE feature_uid = ? AND tenant = ? "
            "ORDER BY episode_uid",
            (uid, tenant),
        )
        return [r[0] for r in rows]

    async def _list(self, tenant: str, category: FeatureCategory | None) -> list[Feature]:
        rows = await self._fetch(
            "SELECT * FROM features WHERE tenant = :tenant "
            "AND (:category IS NULL OR category = :category) ORDER BY category, created_at, uid",
            {"tenant": tenant, "category": None if category is None else category.value},
        )
        return [feature_of(r) for r in rows]
