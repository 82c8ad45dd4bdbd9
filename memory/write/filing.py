"""Filing the outbox: a turn as the outbox keeps it, and how a record goes into the graph store.

`outbox_record` is the record `nodes.record` and `nodes.remember` append when the graph store
cannot take a turn; `drain_outbox` files every waiting record in order (the outbox moves one the
store refuses to its tenant's dead letter, `memory.write.deadletter`), and `replay_dead_letters`
files a tenant's dead-lettered records again for an operator.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from memory.schema import ESS, NewEpisode, as_utc, utcnow
from memory.write.deadletter import DeadLetter, ReplayReport
from memory.write.outbox import DrainReport, write_path

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger(__name__)


def outbox_record(
    *,
    uid: str,
    tenant: str,
    thread_id: str,
    user_text: str,
    agent_text: str | None,
    created_at: datetime,
    ess: ESS | None,
) -> dict[str, object]:
    """A turn as the outbox keeps it (`agent_text=None`: the reply is not known yet)."""
    return {
        "v": 1,
        "uid": uid,
        "tenant": tenant,
        "thread_id": thread_id,
        "user_text": user_text,
        "agent_text": agent_text,
        "created_at": as_utc(created_at).isoformat(),
        "ess": ess.model_dump(mode="json") if ess else None,
        "written_at": utcnow().timestamp(),
    }


async def apply_outbox_record(
    services: Services, record: dict[str, object], *, submit: bool = True
) -> None:
    """Write an outbox record into the graph store (idempotent by uid); with `submit`, queue
    its bookkeeping (else the episode waits, `pending`, for a sweep)."""
    tenant, uid = str(record["tenant"]), str(record["uid"])
    ess = ESS.model_validate(record["ess"]) if record.get("ess") else None
    await services.graph.episodes.create(
        NewEpisode(
            uid=uid,
            tenant=tenant,
            thread_id=str(record["thread_id"]),
            user_text=str(record["user_text"]),
            agent_text=str(record.get("agent_text") or ""),
            created_at=datetime.fromisoformat(str(record["created_at"])),
            ess=ess,
        )
    )
    if record.get("agent_text") is not None:
        await services.graph.episodes.attach_reply(tenant, uid, str(record["agent_text"]))
    if ess is not None:
        await services.graph.episodes.set_ess(tenant, uid, ess)
    if submit:
        services.bookkeeping.submit(tenant, uid)


async def drain_outbox(services: Services, *, submit: bool = True) -> DrainReport:
    """Replay every waiting outbox record of this data directory into the graph store, in order
    (queueing each episode's bookkeeping with `submit`)."""
    outbox, breaker = write_path(services.settings.resolved_outbox_dir)

    async def apply(record: dict[str, object]) -> None:
        await apply_outbox_record(services, record, submit=submit)

    report = await outbox.drain(apply)
    if report.applied and report.error is None:
        breaker.reset()
    if report.applied or report.error:
        log.info("outbox: %d filed, %d refused: %s", report.applied, report.dead, report.error)
    return report


async def replay_dead_letters(
    services: Services, tenant: str, *, uid: str | None = None, submit: bool = True
) -> ReplayReport:
    """File `tenant`'s dead-lettered outbox records (only `uid`'s, when given) again; those the
    store takes leave the dead letter (`memory.write.deadletter`)."""
    dead = DeadLetter.of(services.settings.resolved_outbox_dir)

    async def apply(record: dict[str, object]) -> None:
        await apply_outbox_record(services, record, submit=submit)

    return await dead.replay(apply, tenant, utcnow().timestamp(), uid=uid)
