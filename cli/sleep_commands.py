"""`mneme consolidate`: run a level of sleep over one person's memory; `mneme fidelity`: check
the agent's account of the person against their words."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.progress import TaskID

from cli.common import CommandError, checked_user, console, opened, progress_bar, run


def consolidate(
    user: str = typer.Option(
        ..., "--user", callback=checked_user, help="Whose memory to consolidate."
    ),
    level: str = typer.Option(
        "micro",
        "--level",
        help="micro (salience, utility, links), daily (+ expiry, concepts, diary), deep "
        "(+ forgetting, beliefs, goals, apperception, chapters, reflection, fidelity).",
    ),
    now: str | None = typer.Option(
        None, "--now", help="ISO 8601 time to run at (simulates the passage of time)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Consolidate memory: recompute salience and utility, expire, form concepts and the diary,
    forget (see --level). Stops with exit code 2 if another process is consolidating the user."""
    from graph.consolidation import run_consolidation
    from memory.sleep.leases import Busy
    from memory.sleep.levels import parse_level
    from memory.write.episodes import InvalidInput

    try:
        chosen = parse_level(level)
    except InvalidInput as exc:
        raise typer.BadParameter(str(exc), param_hint="--level") from None

    async def main() -> dict[str, object]:
        async with opened() as services:
            with progress_bar(transient=as_json) as bar:
                tasks: dict[str, TaskID] = {}

                def tick(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = bar.add_task(stage, total=total)
                    bar.update(tasks[stage], completed=done, total=total)

                try:
                    state = await run_consolidation(
                        services, user, chosen.value, now, progress=tick
                    )
                except (InvalidInput, Busy) as exc:
                    raise CommandError(str(exc)) from None
            report: dict[str, object] = state["report"]
            return report

    report = run(main)
    if as_json:
        console.print_json(json.dumps(report))
        return
    console.print(
        f"{report['tenant']} at {report['now']} ({report['level']}): "
        f"{report['rescored']} rescored, {report['expired']} expired, "
        f"{report['archived']} archived, {report['forgotten']} forgotten "
        f"({report['facts_deleted']} facts, {report['reveries']} reveries), "
        f"{report['protected']} protected as sole evidence ({report['context']} beside them), "
        f"{report['pinned']} pinned, "
        f"{report['kept']} kept; links {report['links_reweighed']} reweighed, "
        f"{report['links_pruned']} pruned; {report['summaries']} session summaries written"
    )
    if report.get("apperception") is not None:  # deep: beliefs and how well it knows them
        console.print(
            f"  beliefs {report['beliefs_decayed']} decayed, {report['beliefs_reassessed']} "
            f"reassessed ({report['beliefs_resolved']} resolved), {report['beliefs_removed']} "
            f"removed; apperception {report['apperception']}"
        )
        changed = report.get("goals_changed") or {}
        moves = ", ".join(f"{n} {status}" for status, n in sorted(changed.items()))  # type: ignore[attr-defined]
        console.print(f"  goals {report.get('goals', 0)}: {moves or 'no status changed'}")
    reflection = report.get("reflection")
    if isinstance(reflection, dict):  # deep: the personality snapshot reflected on
        kept = {None: "no new snapshot", True: "new snapshot kept", False: "snapshot not kept"}
        console.print(
            f"  reflection: {reflection['reason'] or 'ran'}; {reflection['revisions']} beliefs "
            f"revised; {kept[reflection['snapshot_kept']]}"
        )
    for note in report.get("notes") or []:  # type: ignore[attr-defined]
        console.print(f"  {note}")


def fidelity(
    user: str = typer.Option(..., "--user", callback=checked_user, help="Whose account to check."),
    as_json: bool = typer.Option(False, "--json", help="Print what was found as JSON."),
) -> None:
    """Check that what the agent holds about the user (facts about them, beliefs formed from
    their turns) still says what they said: report what drifted (deep sleep runs it too)."""
    from memory.sleep.fidelity import check_fidelity

    async def main() -> dict[str, object]:
        async with opened() as services:
            found = await check_fidelity(services, user)
        return found.summary()

    found = run(main)
    if as_json:
        console.print_json(json.dumps(found))
        return
    drifted: list[dict[str, object]] = found["drifted"]  # type: ignore[assignment]
    console.print(
        f"{len(drifted)} of {found['checked']} records drifted from {escape(user)}'s words"
    )
    for d in drifted:
        console.print(f"  [bold]{d['kind']}[/] {escape(str(d['text']))}")
        console.print(f"    {d['reason']}: {escape(str(d['detail']))}")
