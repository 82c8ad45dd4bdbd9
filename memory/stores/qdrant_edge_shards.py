"""The engine side of the Qdrant Edge index: one directory, its lock, one shard per collection.

Everything here is synchronous and runs on the index's worker thread only (`qdrant_edge.py`
owns that thread and is the only caller); nothing here is async and nothing here validates
caller input, which `qdrant_edge_query.py` did before.

Layout: `<dir>/.lock` (held with flock by the one process that has the directory open, and
holding its pid) and `<dir>/<kind>__<embedder fingerprint>/` per collection, a shard directory
with `edge_config.json`, `segments/` and `wal/`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from memory.schema import (
    DENSE_VECTOR,
    PAYLOAD_INDEXES,
    SPARSE_VECTOR,
    VECTOR_KINDS,
    collection_name,
)
from memory.stores.base import SchemaMismatch, StoreLocked, StoreUnavailable
from memory.stores.qdrant_edge_query import payload_index, shard_config
from memory.stores.vectors import CollectionStatus

SCROLL_PAGE = 1024
UPSERT_BATCH = 256
FLUSH_EVERY = 5000
"""Flush the segments after this many written points (the WAL already holds them: a flush only
bounds the replay after a crash and the WAL's size)."""
LOCK_FILE = ".lock"
CONFIG_FILE = "edge_config.json"


class Shards:
    """The open shards of one locked directory, loaded on first use, for one embedder."""

    def __init__(self, path: Path, *, fingerprint: str, dim: int) -> None:
        """Shards under `path` (already locked by the caller) for `fingerprint` and `dim`."""
        self.path = path
        self.fingerprint = fingerprint
        self.dim = dim
        self.unflushed = 0
        """Points written (or delete calls) since the segments were last flushed."""
        self._open: dict[str, qe.EdgeShard] = {}

    # ------------------------------------------------------------------ schema

    def names(self) -> set[str]:
        """Names of the mneme collections in the directory (any embedder)."""
        return {
            entry.name
            for entry in self.path.iterdir()
            if _is_ours(entry.name) and (entry / CONFIG_FILE).is_file()
        }

    def setup(self, rebuild: bool = False) -> None:
        """Create or check this embedder's shards and their payload indexes; see `EdgeIndex`."""
        existing = self.names()
        foreign = sorted(n for n in existing if not self._mine(n))
        if foreign and not any(self._mine(n) for n in existing) and not rebuild:
            others = sorted({n.split("__", 1)[1] for n in foreign})
            raise SchemaMismatch(
                f"the vector index at {str(self.path)!r} holds collections of embedder(s) "
                f"{', '.join(others)} ({', '.join(foreign)}) but the configured embedder is "
                f"{self.fingerprint}; run `mneme reindex` to build its collections from the graph (the "
                f"other embedder's stay as they are), or set MNEME_EMBEDDING_MODEL (and "
                f"MNEME_EMBEDDING_DIM) back to the old model. Vectors of two models are never "
                f"mixed."
            )
        for kind in VECTOR_KINDS:
            name = collection_name(kind, self.fingerprint)
            if name in existing:
                self._check_layout(name)
                shard = self.load(name)
            else:
                shard = self._create(name)
            indexed = shard.info().payload_schema
            for field in PAYLOAD_INDEXES:
                if field not in indexed:
                    shard.update(qe.UpdateOperation.create_field_index(field, payload_index(field)))

    def _check_layout(self, name: str) -> None:
        try:
            config = json.loads((self.path / name / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
        dense = (config.get("vectors") or {}).get(DENSE_VECTOR) or {}
        sparse = (config.get("sparse_vectors") or {}).get(SPARSE_VECTOR) or {}
        if dense.get("distance") != "Cosine" or str(sparse.get("modifier", "")).lower() != "idf":
            raise SchemaMismatch(
                f"collection {name} at {str(self.path)!r} lacks the cosine {DENSE_VECTOR!r} or "
                f"the IDF {SPARSE_VECTOR!r} vector; it was not made by this version of mneme: "
                f"run `mneme reindex`"
            )
        if dense.get("size") != self.dim:
            raise SchemaMismatch(
                f"collection {name} at {str(self.path)!r} holds {dense.get('size')}-dimensional "
                f"vectors but the embedder {self.fingerprint} produces {self.dim}; run `mneme "
                f"reindex`, or set MNEME_EMBEDDING_MODEL / MNEME_EMBEDDING_DIM back to the model "
                f"that built it"
            )

    def drop(self, fingerprint: str | None) -> list[str]:
        """Close and delete the shards of one embedder (every embedder with None), by name."""
        dropped = sorted(
            n for n in self.names() if fingerprint is None or n.split("__", 1)[1] == fingerprint
        )
        for name in dropped:
            shard = self._open.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self.path / name)
        return dropped

    # ------------------------------------------------------------------ data

    def upsert(self, name: str, points: list[qe.Point]) -> None:
        """Write validated points in batches; each batch is in the WAL when `update` returns."""
        shard = self.load(name)
        for start in range(0, len(points), UPSERT_BATCH):
            shard.update(qe.UpdateOperation.upsert_points(points[start : start + UPSERT_BATCH]))
        self._wrote(len(points))

    def delete(self, name: str, flt: qe.Filter) -> None:
        """Delete the points matching `flt` (a tenant filter) if the shard exists."""
        shard = self.existing(name)
        if shard is not None:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            self._wrote(1)

    def query(self, name: str, request: qe.QueryRequest) -> list[qe.ScoredPoint]:
        """Run one query; an absent shard has no points."""
        shard = self.existing(name)
        return [] if shard is None else shard.query(request)

    def query_batch(self, name: str, requests: list[qe.QueryRequest]) -> list[list[qe.ScoredPoint]]:
        """Run several queries of one shard as one planned batch; an absent shard has no points."""
        shard = self.existing(name)
        if shard is None:
            return [[] for _ in requests]
        if len(requests) == 1:
            return [shard.query(requests[0])]
        return shard.query_batch(qe.QueryBatchRequest(requests))

    def scroll(
        self, name: str, flt: qe.Filter | None, payload: bool | list[str]
    ) -> list[qe.Record]:
        """Every record matching `flt`, page by page, in id order."""
        shard = self.existing(name)
        if shard is None:
            return []
        records: list[qe.Record] = []
        offset: Any = None
        while True:
            page, offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, filter=flt, with_payload=payload)
            )
            records += page
            if offset is None:
                return records

    def retrieve(self, name: str, ids: list[str], payload: list[str]) -> list[qe.Record]:
        """The records of `ids` that exist, with their dense vector and `payload` fields; an
        absent shard has none."""
        shard = self.existing(name)
        if shard is None:
            return []
        point_ids: list[qe.PointId] = list(ids)
        return shard.retrieve(point_ids, with_payload=payload, with_vector=[DENSE_VECTOR])

    def count(self, name: str, flt: qe.Filter) -> int:
        """Exact number of points matching `flt`."""
        shard = self.existing(name)
        return 0 if shard is None else shard.count(qe.CountRequest(exact=True, filter=flt))

    # ------------------------------------------------------------------ maintenance

    def optimize(self) -> bool:
        """Run the engine's optimizers (HNSW build, merge, vacuum) on this embedder's shards."""
        changed = False
        for name in sorted(self.names()):
            if self._mine(name):
                changed = self.load(name).optimize() or changed
        return changed

    def statuses(self) -> list[CollectionStatus]:
        """Every collection with its counts; another embedder's shards are listed, not opened."""
        out = []
        for name in sorted(self.names()):
            if not self._mine(name):
                out.append(CollectionStatus(name, None))
                continue
            info = self.load(name).info()
            out.append(
                CollectionStatus(
                    name, info.points_count, info.indexed_vectors_count, info.segments_count
                )
            )
        return out

    def close(self) -> None:
        """Flush and close every open shard."""
        shards, self._open = self._open, {}
        for shard in shards.values():
            try:
                shard.flush()
            finally:
                shard.close()

    # ------------------------------------------------------------------ helpers

    def existing(self, name: str) -> qe.EdgeShard | None:
        """The shard if it exists (loading it), else None."""
        if name in self._open:
            return self._open[name]
        if (self.path / name / CONFIG_FILE).is_file():
            return self.load(name)
        return None

    def load(self, name: str) -> qe.EdgeShard:
        """The open shard `name`, loaded (and its WAL replayed) on first use."""
        shard = self._open.get(name)
        if shard is None:
            config = shard_config(self.dim)
            shard = _engine(
                self.path / name, lambda: qe.EdgeShard.load(str(self.path / name), config)
            )
            self._open[name] = shard
        return shard

    def _create(self, name: str) -> qe.EdgeShard:
        config = shard_config(self.dim)
        shard = _engine(
            self.path / name, lambda: qe.EdgeShard.create(str(self.path / name), config)
        )
        self._open[name] = shard
        return shard

    def _mine(self, name: str) -> bool:
        return name.split("__", 1)[1] == self.fingerprint

    def _wrote(self, points: int) -> None:
        self.unflushed += points
        if self.unflushed >= FLUSH_EVERY:
            for shard in self._open.values():
                shard.flush()
            self.unflushed = 0


def lock_directory(location: Path) -> tuple[Path, IO[str]]:
    """Create the directory and take its lock file, or raise `StoreUnavailable` with the fix."""
    path = location.expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        lock = (path / LOCK_FILE).open("a+", encoding="utf-8")
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot open the Qdrant Edge directory {path}: {exc}; point the vector store "
            f"at a writable directory (QDRANT_PATH or MNEME_DATA_DIR)"
        ) from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise held(path, holder) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return path, lock


def held(path: Path, holder: str) -> StoreLocked:
    """The error for a directory (or shard) that another process has open."""
    pid = holder if holder.isdigit() else ""
    by = f" (pid {pid})" if pid else ""
    return StoreLocked(
        f"the Qdrant Edge directory {path} is already open in another process{by}, e.g. a "
        f"running `mneme` or `langgraph dev`; only one process can open a Qdrant Edge directory "
        f"at a time. Stop the other process, or run a Qdrant server and set QDRANT_URL so that "
        f"several processes can share it",
        pid,
    )


def _engine(path: Path, make: Callable[[], qe.EdgeShard]) -> qe.EdgeShard:
    # Our lock normally stops a second process first; the engine's own WAL lock is the backstop.
    try:
        return make()
    except Exception as exc:
        if "WAL" in str(exc) and "WouldBlock" in str(exc):
            raise held(path, "") from None
        raise


def _is_ours(name: str) -> bool:
    kind, sep, rest = name.partition("__")
    return bool(sep and rest) and kind in VECTOR_KINDS
