"""The outbox's dead letter: records the graph store refused, kept per tenant for an operator.

An outbox record the graph store answers and refuses (a uid another tenant holds, a record that
no longer validates: anything but the store being unreachable, `memory.stores.errors.
unavailable`) cannot be filed by trying again, and the drain must not wait behind it. It is moved
here, durably, before the outbox file that held it is deleted: one file per tenant,
`<outbox dir>/dead/<sha256 of the tenant>.jsonl`, one JSON line per record (the outbox record as
it was, with `error` and `failed_at`). `mneme doctor` counts them; `mneme outbox list | replay |
drop` shows, files again (once the cause is gone) or discards them. A record already here is not
added twice (a drain repeated after a crash finds it again).

Every change holds an exclusive `flock` on `dead/.lock`, so a server's drain and an operator's
command in another process never lose each other's lines. This module never reads the stores:
`replay` is given the function that files a record.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.stores.errors import unavailable

Record = dict[str, Any]
Apply = Callable[[Record], Awaitable[None]]

_LETTER_FIELDS = ("error", "failed_at")


@dataclass(frozen=True, slots=True)
class Letter:
    """One refused record: its tenant, uid, why it was refused and when (epoch seconds)."""

    tenant: str
    uid: str
    error: str
    failed_at: float
    record: Record


@dataclass(slots=True)
class ReplayReport:
    """What a replay did: records filed, records of those asked for still in the dead letter,
    and the last error if any."""

    filed: int = 0
    kept: int = 0
    error: str | None = None


def _key(record: Record) -> str:
    """A record's identity in the dead letter (the outbox record without the letter's fields)."""
    kept = {k: v for k, v in record.items() if k not in _LETTER_FIELDS}
    return json.dumps(kept, ensure_ascii=False, sort_keys=True)


def _line(record: Record) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8", "surrogatepass")


class DeadLetter:
    """The per-tenant dead letter of one outbox directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        """The dead letter under `directory` (created on the first refused record)."""
        self.directory = Path(directory)

    @classmethod
    def of(cls, outbox_directory: Path) -> DeadLetter:
        """The dead letter of the outbox in `outbox_directory`."""
        return cls(Path(outbox_directory) / "dead")

    def path(self, tenant: str) -> Path:
        """The file of `tenant`'s refused records."""
        digest = hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"{digest[:32]}.jsonl"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def add(self, record: Record, error: str, at: float) -> bool:
        """Keep a refused record durably (fsync'd); False when it was already here. Raises
        `OSError` when it cannot be written (the caller keeps it where it was)."""
        path = self.path(str(record.get("tenant", "")))
        with self._locked():
            known = {_key(r) for r in _read(path)}
            if _key(record) in known:
                return False
            line = _line({**record, "error": error, "failed_at": at})
            if path.exists() and not path.read_bytes().endswith(b"\n"):
                line = b"\n" + line  # after a torn line (a crash inside a write), a line of its own
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(self.directory)
        return True

    def letters(self, tenant: str | None = None) -> list[Letter]:
        """The refused records (of `tenant`, or of every tenant), in the order they came."""
        paths = [self.path(tenant)] if tenant is not None else self._files()
        out: list[Letter] = []
        for path in paths:
            for r in _read(path):
                if tenant is not None and r.get("tenant") != tenant:
                    continue
                out.append(
                    Letter(
                        tenant=str(r.get("tenant", "")),
                        uid=str(r.get("uid", "")),
                        error=str(r.get("error", "")),
                        failed_at=float(r.get("failed_at") or 0.0),
                        record={k: v for k, v in r.items() if k not in _LETTER_FIELDS},
                    )
                )
        return out

    def drop(self, tenant: str, uid: str | None = None) -> int:
        """Discard `tenant`'s refused records (only `uid`'s, when given); how many went."""
        return self._keep_only(tenant, lambda r: uid is not None and r.get("uid") != uid)

    async def replay(
        self, apply: Apply, tenant: str, at: float, uid: str | None = None
    ) -> ReplayReport:
        """File `tenant`'s refused records (only `uid`'s, when given) again through `apply`, in
        order; those filed leave the dead letter, the others stay with their new error. Stops at
        the first record the store cannot be reached for (the rest stay as they were)."""
        report = ReplayReport()
        filed: set[str] = set()
        errors: dict[str, str] = {}
        for letter in self.letters(tenant):
            if uid is not None and letter.uid != uid:
                continue
            try:
                await apply(letter.record)
            except Exception as exc:
                report.error = f"{type(exc).__name__}: {exc}"
                if unavailable(exc):
                    break
                errors[_key(letter.record)] = report.error
                continue
            filed.add(_key(letter.record))
            report.filed += 1

        def stays(r: Record) -> bool:
            return _key(r) not in filed

        def update(r: Record) -> Record:
            error = errors.get(_key(r))
            return r if error is None else {**r, "error": error, "failed_at": at}

        self._keep_only(tenant, stays, update)
        report.kept = len([x for x in self.letters(tenant) if uid is None or x.uid == uid])
        return report

    def _keep_only(
        self,
        tenant: str,
        keep: Callable[[Record], bool],
        update: Callable[[Record], Record] = lambda r: r,
    ) -> int:
        """Rewrite `tenant`'s file with the records `keep` says (atomically); how many went."""
        path = self.path(tenant)
        with self._locked():
            records = [r for r in _read(path) if r.get("tenant") == tenant]
            kept = [update(r) for r in records if keep(r)]
            if not kept:
                path.unlink(missing_ok=True)
            else:
                tmp = path.with_suffix(".tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, b"".join(_line(r) for r in kept))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            fsync_dir(self.directory)
        return len(records) - len(kept)

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.directory.glob("*.jsonl") if p.is_file())
        except OSError:
            return []


def _read(path: Path) -> list[Record]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[Record] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (ValueError, UnicodeDecodeError):
            continue  # a torn last line: its record is still in the outbox file it came from
        if isinstance(value, dict):
            out.append(value)
    return out


def fsync_dir(directory: Path) -> None:
    """Make the creations, renames and deletions in `directory` durable (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
