"""Which uid an imported episode gets, so that no import can claim a uid another user will need.

Uids are unique across the whole store, and most are predictable (a turn's is derived from its
tenant, thread and message id; a store item's from its namespace and key). An import that kept
whatever uid the file names would let one user take a uid another will write later (that write
then fails for good), and would answer differently when the uid is someone else's. So an import
keeps an episode's uid only when the importing user already has that uid (a re-import) or the
file proves this installation exported it from this same user: each exported episode carries
`proof`, an HMAC-SHA256 of (user, uid) under a key kept in the data directory
(`<data dir>/export.key`, 32 random bytes, mode 0600, made on first use). Any other episode gets
`stable_uid(user, "imported", uid)`: derived from the importing user, so it is the same on a
repeated import, and never one another user's writes produce. Export -> erase -> import on the
same installation keeps the uids; a file from elsewhere, edited, or naming another user gets
derived ones. Nothing here reads another user's data.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memory.schema import ESS, EpisodeSource, stable_uid
from memory.write.episodes import RememberResult, remember

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger(__name__)

KEY_FILE = "export.key"
KEY_BYTES = 32


def export_key(data_dir: Path) -> bytes | None:
    """The export key of this installation (made on first use); None when it cannot be read or
    made (exports then carry no proof, and imports derive every uid they do not own)."""
    path = Path(data_dir) / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("the export key %s cannot be read (%s)", path, exc.strerror)
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile
        return _read_or_none(path)
    except OSError as exc:
        log.warning("the export key %s cannot be made (%s)", path, exc.strerror)
        return None
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    return _read_or_none(path)


def _read(path: Path) -> bytes:
    key = path.read_bytes()
    if len(key) != KEY_BYTES:  # torn by a crash while it was made: unusable, never guessed
        raise OSError(0, f"{path} holds {len(key)} bytes, not {KEY_BYTES}")
    return key


def _read_or_none(path: Path) -> bytes | None:
    try:
        return _read(path)
    except OSError as exc:
        log.warning("the export key %s cannot be read (%s)", path, exc)
        return None


def uid_proof(key: bytes | None, tenant: str, uid: str) -> str | None:
    """The proof that this installation exported `uid` from `tenant` (None without a key)."""
    if key is None:
        return None
    message = "\x1f".join(("episode", tenant, uid)).encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def imported_uid(key: bytes | None, tenant: str, uid: str, proof: str | None, owned: bool) -> str:
    """The uid an imported episode gets: its own when `tenant` already has it (`owned`) or
    `proof` proves this installation exported it from `tenant`; else one derived from `tenant`."""
    expected = uid_proof(key, tenant, uid)
    given = (proof or "").encode("utf-8", "surrogatepass")
    if owned or (expected is not None and hmac.compare_digest(given, expected.encode())):
        return uid
    return stable_uid(tenant, "imported", uid)


async def import_turn(
    services: Services,
    tenant: str,
    key: bytes | None,
    *,
    uid: str,
    proof: str | None,
    thread_id: str,
    user_text: str,
    agent_text: str,
    created_at: datetime,
    ess: ESS | None,
    source: EpisodeSource = EpisodeSource.STATED,
) -> RememberResult:
    """Write one exported turn as `tenant`'s through the write path, under the uid
    `imported_uid` gives it (reads only `tenant`'s memory)."""
    owned = await services.graph.episodes.get(tenant, uid) is not None
    return await remember(
        services,
        tenant=tenant,
        thread_id=thread_id,
        user_text=user_text,
        agent_text=agent_text,
        at=created_at,
        ess=ess,
        uid=imported_uid(key, tenant, uid, proof, owned),
        source=source,
    )
