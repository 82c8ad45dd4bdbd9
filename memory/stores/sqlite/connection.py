"""The SQLite graph store's plumbing: the connection, its worker thread, transactions, setup.

The kind modules beside this one (episodes, topics, ...) hold the SQL; each defines its kinds'
operations objects on `kind.SqliteKind`, over the store's one `SqliteConnection`, whose methods
run their statements through `_run`, `_fetch` and `_write`. Functions passed to `_run` take the
connection first and are either one statement or one `BEGIN IMMEDIATE` transaction. Every value
is bound as a parameter.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec, Self, TypeVar

from memory.schema import SCHEMA_VERSION
from memory.settings import Settings
from memory.stores.errors import SchemaMismatch, StoreClosed, StoreUnavailable

P = ParamSpec("P")
T = TypeVar("T")
Conn = sqlite3.Connection
Params = Sequence[object] | dict[str, object]

BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another process's transaction before the store reports it locked."""

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
)
"""The store's own table (the schema version); each kind module has the DDL of its records."""

CACHE_KB = 65_536
"""SQLite's page cache per connection, at most (`PRAGMA cache_size`, in KiB)."""

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
_TABLE = re.compile(r"^CREATE TABLE IF NOT EXISTS (\w+)")


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


def fetch(conn: Conn, sql: str, params: Params) -> list[sqlite3.Row]:
    """Run one read query."""
    return conn.execute(sql, params).fetchall()


def write(conn: Conn, sql: str, params: Params) -> int:
    """Run one write statement in its own transaction; the number of rows changed."""
    with immediate(conn):
        return conn.execute(sql, params).rowcount


def episode_exists(conn: Conn, tenant: str, uid: str) -> bool:
    """True if the tenant has an episode with this uid (for edges written inside a transaction)."""
    row = conn.execute("SELECT 1 FROM episodes WHERE uid = ? AND tenant = ?", (uid, tenant))
    return row.fetchone() is not None


def _schema_version(conn: Conn) -> int | None:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not has_meta:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else int(row[0])


def add_columns(conn: Conn, migrations: Sequence[tuple[str, str]]) -> None:
    """Add each missing column to its table, when the table exists (inside a transaction)."""
    for table, definition in migrations:
        # Table and column names come from our own DDL, never from input.
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}
        if have and definition.split()[0] not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {definition}")


def _ping(conn: Conn) -> None:
    # Taking the write lock proves the file and its directory are writable, and writes nothing.
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ROLLBACK")


class SqliteConnection:
    """One SQLite file (WAL, foreign keys) behind one worker thread; shareable by processes."""

    ddl: ClassVar[tuple[str, ...]] = DDL
    """Every table and index, in order; the store sets it from the kind modules."""
    migrations: ClassVar[dict[int, Callable[[Conn], None]]] = {}
    """Version n -> n+1 steps, run with foreign keys off inside the setup transaction."""

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
        self._compose()

    def _compose(self) -> None:
        """Build what lives on this connection: the store's kinds (here, nothing)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
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
                self._enable_wal(conn)
                # FULL: a commit survives power loss, not only a process crash. Measured on the
                # dev VM (ext4, busy 2-core box, 1000 calls): episodes.create p50 2.5-3.9 ms, p95
                # 5.6-10 ms with FULL, vs p50 0.3 ms with NORMAL. FULL fits the ~5 ms p50 budget.
                conn.execute("PRAGMA synchronous = FULL")
                # A page cache of up to 64 MB (the default is 2 MB): a retrieval's reads touch
                # pages all over the file, and re-reading them through the OS cost ~1 ms of a
                # ~17 ms retrieval at 10k derivatives (docs/adr/0112-fewer-leaner-reads.md).
                conn.execute(f"PRAGMA cache_size = -{CACHE_KB}")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _enable_wal(self, conn: Conn) -> None:
        """Switch the file to WAL, waiting up to the busy timeout for other processes.

        The pragma takes a write lock, and SQLite skips the busy handler where it sees a
        possible deadlock, answering "database is locked" at once. On a cold CI run two
        processes opening one new file together failed here; retrying until the busy timeout
        is the wait the busy handler would have given."""
        deadline = time.monotonic() + self._busy_timeout_s
        pause = 0.01
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if _primary_code(exc) != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _on_worker(self, lazy_setup: bool, fn: Callable[..., T], args: tuple[object, ...]) -> T:
        conn = self._connection()
        if lazy_setup and not self._schema_ready:
            # Applied on first use too (docs/design.md section 4); a file already at this version costs one read.
            if _schema_version(conn) != SCHEMA_VERSION:
                self._apply_schema(conn)
            self._schema_ready = True
        return fn(conn, *args)

    async def _call(self, lazy_setup: bool, fn: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise StoreClosed(f"the SQLite graph store at {self.path} is closed")
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
        """Run `fn(conn, *args, **kwargs)` on the worker thread (setting up the file first)."""
        return await self._call(True, partial(fn, **kwargs), *args)

    async def _fetch(self, sql: str, params: Params) -> list[sqlite3.Row]:
        """The rows of one read query."""
        return await self._run(fetch, sql, params)

    async def _write(self, sql: str, params: Params) -> int:
        """Run one write statement as its own transaction; the number of rows changed."""
        return await self._run(write, sql, params)

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

    def _apply_schema(self, conn: Conn) -> None:
        """Apply the DDL (migrating an older file first) and record its version in one
        transaction; refuse a newer file."""
        # A migration rebuilds tables; foreign keys must be off for that, and the pragma cannot
        # change inside a transaction, so it is turned off around the whole setup.
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            self._apply_schema_tx(conn)
        finally:
            conn.execute("PRAGMA foreign_keys = ON")

    def _apply_schema_tx(self, conn: Conn) -> None:
        with immediate(conn):
            found = _schema_version(conn)
            if found is not None and found > SCHEMA_VERSION:
                raise SchemaMismatch(
                    f"the SQLite graph file {self.path} holds schema version {found}, newer than "
                    f"this mneme's {SCHEMA_VERSION}; upgrade mneme, or set MNEME_SQLITE_PATH to "
                    "another file"
                )
            for version in range(found or SCHEMA_VERSION, SCHEMA_VERSION):
                self.migrations[version](conn)
            if found is not None and found < SCHEMA_VERSION:
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise SchemaMismatch(
                        f"migrating {self.path} from schema {found} left {len(broken)} dangling "
                        "references; the file is unchanged (restore it or start a new one)"
                    )
            for statement in self.ddl:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    # ---- lifecycle

    async def setup(self) -> None:
        """Create tables and indexes and record the schema version; idempotent, multi-process safe."""
        await self._call(False, self._setup_on_worker)

    def _setup_on_worker(self, conn: Conn) -> None:
        self._apply_schema(conn)
        self._schema_ready = True

    async def schema_version(self) -> int | None:
        """The schema version recorded in the file, or None before setup."""
        return await self._call(False, _schema_version)

    async def ping(self) -> None:
        """Raise `StoreUnavailable` (with the fix) unless the file can be opened for writing."""
        await self._call(False, _ping)

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

    async def _erase_tenant(self, tenant: str) -> int:
        """Delete every row of the tenant in one transaction; the number of rows deleted."""
        return await self._run(self._erase, tenant)

    def _erase(self, conn: Conn, tenant: str) -> int:
        # Every table but `meta` has a tenant column; children first, so the count is of rows
        # this statement deleted rather than of cascades. Names come from our own DDL.
        tables = [m[1] for m in map(_TABLE.match, self.ddl) if m and m[1] != "meta"]
        deleted = 0
        with immediate(conn):
            for table in reversed(tables):
                cur = conn.execute(f"DELETE FROM {table} WHERE tenant = ?", (tenant,))  # noqa: S608
                deleted += cur.rowcount
        return deleted

    async def _wipe_for_tests(self) -> None:
        """Delete every row but keep the schema (the contract suite calls it between tests)."""
        await self._run(self._wipe)

    def _wipe(self, conn: Conn) -> None:
        # Every table the DDL creates but `meta`; edges go with their ends (ON DELETE CASCADE).
        tables = [m[1] for m in map(_TABLE.match, self.ddl) if m and m[1] != "meta"]
        with immediate(conn):
            for table in tables:
                conn.execute(f"DELETE FROM {table}")  # noqa: S608 - names from our own DDL


def _cannot_open(path: Path, exc: BaseException) -> str:
    return (
        f"cannot open the SQLite graph file {path} ({exc}); make sure its directory exists and is "
        "writable, or set MNEME_SQLITE_PATH (or MNEME_DATA_DIR) to a writable location"
    )


def _primary_code(exc: sqlite3.Error) -> int:
    # Errors raised by the sqlite3 module itself (not by SQLite) carry no code.
    code: int = getattr(exc, "sqlite_errorcode", 0) or 0
    return code & 0xFF
