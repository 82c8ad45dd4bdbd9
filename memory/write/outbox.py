"""The durable local outbox: turns the graph store could not take wait here, then drain into it.

When a turn cannot be written to the graph store, it is appended to this process's outbox file
(`<data_dir>/outbox/<time>-<pid>-<random>.jsonl`): one JSON line per record, written with
`O_APPEND` and `fsync`ed before `append` returns, so an appended record survives a crash or a
power cut. The owning process holds an exclusive `flock` on its file while it lives.

`drain` replays every file whose owner is gone (the lock is free) and this process's own, oldest
first and line by line in order, through `apply`; a file is deleted only when each of its records
was applied or moved to the dead letter. An `apply` that fails because the store cannot be
reached (`memory.stores.errors.unavailable`) stops the drain there (the rest wait for the next
drain, so order is kept); one the store refuses for any other reason moves that record to its
tenant's dead letter (`memory.write.deadletter`) and the drain goes on, so no record holds back
another tenant's. A record is a whole episode under its deterministic uid, so a replay after a
crash half-way through a file writes nothing twice. A torn last line (a crash inside `write`) was
never acknowledged and is skipped.

`Breaker` remembers that the graph store just failed, so the next turns go straight here for a
while instead of each waiting for the store's timeout.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.stores.errors import unavailable
from memory.write.deadletter import DeadLetter, fsync_dir

log = logging.getLogger("mneme.outbox")

Record = dict[str, Any]
Apply = Callable[[Record], Awaitable[None]]


class OutboxError(OSError):
    """The outbox could not make a record durable (the turn is not remembered)."""


@dataclass(slots=True)
class DrainReport:
    """What a drain did: records applied, records moved to the dead letter, files finished,
    and the failure that stopped it (the store could not be reached) if any."""

    applied: int = 0
    files: int = 0
    skipped_torn: int = 0
    error: str | None = None
    dead: int = 0


@dataclass(slots=True)
class OutboxState:
    """How many records wait, and the time of the oldest (None when empty)."""

    depth: int = 0
    files: int = 0
    oldest_at: float | None = None
    unreadable: list[str] = field(default_factory=list)
    dead: int = 0
    """Records in the dead letter (refused by the store; an operator replays or drops them)."""
    dead_tenants: int = 0


class Outbox:
    """One process's outbox in one directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        """An outbox under `directory`; nothing is created until the first append."""
        self.directory = Path(directory)
        self.dead = DeadLetter.of(self.directory)
        """Where the records the store refuses go (see the module docstring)."""
        self._fd: int | None = None
        self._path: Path | None = None
        self._lock = threading.Lock()
        self._draining = threading.Lock()
        self._held: dict[Path, int] = {}
        """Files this process holds the lock of (its own, and dead owners' it began draining)."""

    def append(self, record: Record) -> None:
        """Write `record` durably (fsync'd) or raise `OutboxError`."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
            "utf-8", "surrogatepass"
        )
        with self._lock:
            try:
                fd = self._open()
                os.write(fd, line)
                os.fsync(fd)
            except OSError as exc:
                raise OutboxError(exc.errno, f"outbox not writable: {exc.strerror}") from None

    def _open(self) -> int:
        if self._fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            path = self.directory / name
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            fsync_dir(self.directory)
            self._fd, self._path = fd, path
        return self._fd

    def _rotate(self) -> tuple[int, Path] | None:
        """Hand this process's current file to the drain; the next append starts another."""
        with self._lock:
            if self._fd is None or self._path is None:
                return None
            current = (self._fd, self._path)
            self._fd = self._path = None
            return current

    def files(self) -> list[Path]:
        """Every outbox file in this directory, oldest first."""
        try:
            return sorted(p for p in self.directory.glob("*.jsonl") if p.is_file())
        except OSError:
            return []

    def state(self) -> OutboxState:
        """Depth and age of what waits (every process's files; read only)."""
        out = OutboxState()
        for path in self.files():
            try:
                records, _ = _read(path)
            except OSError:
                out.unreadable.append(path.name)
                continue
            out.files += 1
            out.depth += len(records)
            if records:
                first = float(records[0].get("written_at", path.stat().st_mtime))
                out.oldest_at = first if out.oldest_at is None else min(out.oldest_at, first)
        letters = self.dead.letters()
        out.dead, out.dead_tenants = len(letters), len({x.tenant for x in letters})
        return out

    async def drain(self, apply: Apply) -> DrainReport:
        """Apply every waiting record in order (files of dead owners and this process's own)."""
        report = DrainReport()
        if not self._draining.acquire(blocking=False):
            return report  # another drain of this process is on it
        try:
            own = self._rotate()
            if own is not None:
                self._held[own[1]] = own[0]
            for path in self.files():
                fd = self._held.get(path)
                if fd is None:
                    fd = _claim(path)
                    if fd is None:
                        continue  # its owner is alive and still writing
                    self._held[path] = fd
                if not await self._drain_file(path, apply, report):
                    break  # keep the lock: the rest of this file waits, in order
                os.close(self._held.pop(path))
        finally:
            self._draining.release()
        return report

    async def _drain_file(self, path: Path, apply: Apply, report: DrainReport) -> bool:
        records, torn = _read(path)
        report.skipped_torn += torn
        for record in records:
            try:
                await apply(record)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                if unavailable(exc) or not self._bury(record, error, report):
                    report.error = error
                    log.warning("outbox: %s stays for the next drain (%s)", path.name, exc)
                    return False
                continue
            report.applied += 1
        _remove(path)
        report.files += 1
        return True

    def _bury(self, record: Record, error: str, report: DrainReport) -> bool:
        """Move a refused record to its tenant's dead letter; False if that failed too."""
        try:
            if self.dead.add(record, error, time.time()):
                report.dead += 1
        except OSError as exc:
            log.error("outbox: the dead letter is not writable (%s)", exc)
            return False
        log.error(
            "outbox: a record of tenant %r (uid %s) was refused (%s); it is in the dead letter "
            "(`mneme outbox list`)",
            record.get("tenant"),
            record.get("uid"),
            error,
        )
        return True


def _claim(path: Path) -> int | None:
    """Open a file whose owner is gone, holding its lock; None while its owner lives."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _read(path: Path) -> tuple[list[Record], int]:
    """The records of a file in order, and how many torn lines were skipped."""
    records: list[Record] = []
    torn = 0
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (ValueError, UnicodeDecodeError):
            torn += 1
            continue
        if isinstance(value, dict):
            records.append(value)
    return records, torn


def _remove(path: Path) -> None:
    """Delete a drained file and make the deletion durable."""
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


class Breaker:
    """After a store failure, say "skip the store" for `retry_s` seconds (then try it again)."""

    def __init__(self) -> None:
        """A closed breaker (the store is tried)."""
        self._open_until = 0.0
        self.last_error: str | None = None

    def allows(self) -> bool:
        """True when the store should be tried now."""
        return time.monotonic() >= self._open_until

    def trip(self, retry_s: float, error: str) -> None:
        """The store just failed: skip it for `retry_s` seconds."""
        self._open_until = time.monotonic() + retry_s
        self.last_error = error

    def reset(self) -> None:
        """The store answered: try it again every time."""
        self._open_until = 0.0
        self.last_error = None


_outboxes: dict[Path, tuple[Outbox, Breaker]] = {}
_registry_lock = threading.Lock()


def write_path(directory: Path) -> tuple[Outbox, Breaker]:
    """The outbox and store breaker of this process for a data directory (one pair per directory)."""
    key = Path(directory).resolve()
    with _registry_lock:
        if key not in _outboxes:
            _outboxes[key] = (Outbox(key), Breaker())
        return _outboxes[key]
