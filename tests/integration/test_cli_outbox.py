"""`mneme doctor` and `mneme outbox list | replay | drop` as an operator runs them (settings from
the environment, the embedded store): a record the store refused is reported, listed, filed
again once its cause is gone, and can be discarded."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cli.common import opened
from memory.schema import NewEpisode
from memory.write.filing import drain_outbox, outbox_record
from memory.write.outbox import write_path
from tests.integration.test_cli_knowledge import cli, data_dir

__all__ = ["data_dir"]


def turn(tenant: str, uid: str) -> dict[str, object]:
    return outbox_record(
        uid=uid,
        tenant=tenant,
        thread_id="t",
        user_text=f"{tenant}'s turn {uid}",
        agent_text="Noted.",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
        ess=None,
    )


async def test_an_operator_sees_replays_and_drops_refused_records(data_dir: Path) -> None:
    async with opened() as services:
        for uid in ("held-1", "held-2"):
            squat = NewEpisode(
                uid=uid, tenant="mallory", thread_id="t", user_text="x", agent_text=""
            )
            await services.graph.episodes.create(squat)
        outbox, _ = write_path(services.settings.resolved_outbox_dir)
        outbox.append(turn("bob", "held-1"))
        outbox.append(turn("bob", "held-2"))
        outbox.append(turn("cyd", "cyd-1"))
        report = await drain_outbox(services, submit=False)
        assert (report.applied, report.dead) == (1, 2)

    code, out = await cli("doctor")
    assert code == 1 and "dead letter: 2 record(s) of 1 user(s)" in out, out
    code, out = await cli("outbox", "list")
    assert code == 0 and "bob  held-1" in out and "bob  held-2" in out and "taken" in out, out

    code, out = await cli("outbox", "replay", "--user", "bob")
    assert code == 1 and "0 filed, 2 still refused" in out, out
    async with opened() as services:
        await services.graph.episodes.delete("mallory", "held-1")
    code, out = await cli("outbox", "replay", "--user", "bob", "--uid", "held-1")
    assert code == 0 and "1 filed, 0 still refused" in out, out
    async with opened() as services:
        filed = await services.graph.episodes.get("bob", "held-1")
        assert filed is not None and filed.user_text == "bob's turn held-1"

    code, out = await cli("outbox", "drop", "--user", "bob", "--yes")
    assert code == 0 and "1 record(s) discarded" in out, out
    code, out = await cli("outbox", "list")
    assert "0 record(s) in the dead letter" in out, out
