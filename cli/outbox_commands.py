"""`mneme outbox list | replay | drop`: the outbox records the graph store refused (the dead
letter, `memory.write.deadletter`), for an operator to see, file again or discard."""

from __future__ import annotations

from datetime import UTC, datetime

import typer

from cli.common import checked_user, console, err, opened, run, safe
from memory.settings import load_settings
from memory.write.deadletter import DeadLetter

USER = typer.Option(..., "--user", "-u", callback=checked_user, help="Whose refused records.")
UID = typer.Option(None, "--uid", help="Only the record of this episode uid.")


def _dead() -> DeadLetter:
    return DeadLetter.of(load_settings().resolved_outbox_dir)


def list_() -> None:
    """List the refused outbox records: user, uid, when and why."""
    letters = _dead().letters()
    for x in letters:
        when = datetime.fromtimestamp(x.failed_at, UTC).isoformat(timespec="seconds")
        console.print(f"{safe(x.tenant)}  {safe(x.uid)}  {when}  {safe(x.error)}")
    console.print(f"{len(letters)} record(s) in the dead letter")


def replay(user: str = USER, uid: str | None = UID) -> None:
    """File a user's refused records again (after removing their cause); exit 1 if any stay."""
    from memory.write.filing import replay_dead_letters

    async def main() -> int:
        async with opened(bookkeeping=True) as services:
            report = await replay_dead_letters(services, user, uid=uid)
        console.print(f"{report.filed} filed, {report.kept} still refused")
        if report.error:
            err.print(f"  last error: {safe(report.error)}")
        return report.kept

    if run(main):
        raise typer.Exit(1)


def drop(
    user: str = USER,
    uid: str | None = UID,
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
) -> None:
    """Discard a user's refused records (they are then lost for good)."""
    dead = _dead()
    n = len([x for x in dead.letters(user) if uid is None or x.uid == uid])
    if n and not yes:
        typer.confirm(f"discard {n} refused record(s) of {safe(user)} for good?", abort=True)
    console.print(f"{dead.drop(user, uid)} record(s) discarded")
