"""`mneme setup`, `doctor`, `sweep`, `reindex`: looking after the stores."""

from __future__ import annotations

import typer

from cli.common import checked_user, console, err, opened, progress_bar, run, safe
from memory.settings import load_settings


def setup() -> None:
    """Create the graph schema and the vector collections (idempotent)."""

    async def main() -> None:
        settings = load_settings()
        async with opened(settings, setup=True) as services:
            version = await services.graph.schema_version()
            console.print(
                f"graph: {services.graph.backend} schema v{version}; vectors: "
                f"{settings.resolved_qdrant_location} ({services.embedder.fingerprint})"
            )

    run(main)


def doctor() -> None:
    """Check settings, connectivity, the embedder, schema and graph/vector consistency; exit 1
    if unwell."""
    from memory.services.doctor import run_doctor

    report = run(run_doctor)
    for check in report.checks:
        mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]"
        console.print(f"{mark} {safe(check.name)}: {safe(check.detail)}")
    if not report.ok:
        raise typer.Exit(1)


def sweep(
    user: str | None = typer.Option(
        None, "--user", callback=checked_user, help="Only this person's memory."
    ),
    retry_quarantined: bool = typer.Option(
        False, "--retry-quarantined", help="Also retry episodes quarantined after failing."
    ),
) -> None:
    """File the outbox, then run bookkeeping for every episode left unfinished."""
    from graph.bookkeeping import run_episode
    from memory.schema import Episode
    from memory.write.episodes import sweep as sweep_episodes
    from memory.write.filing import drain_outbox

    async def main() -> bool:
        async with opened() as services:
            filed = await drain_outbox(services, submit=False)  # the sweep below runs them
            if filed.applied or filed.error:
                console.print(f"outbox: {filed.applied} turns filed into the graph store")
            if filed.dead:
                err.print(
                    f"  outbox: {filed.dead} records refused by the graph store went to the dead "
                    "letter; `mneme outbox list` shows them"
                )
            if filed.error:
                err.print(f"  outbox not fully filed: {safe(filed.error)}")
            with progress_bar() as bar:
                task = bar.add_task("sweeping", total=None)

                def tick(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                async def process(episode: Episode) -> None:
                    await run_episode(services, episode.tenant, episode.uid)

                report = await sweep_episodes(
                    services,
                    tenant=user,
                    progress=tick,
                    process=process,
                    retry_quarantined=retry_quarantined,
                )
            console.print(
                f"{len(report.done)} episodes completed, {len(report.failed)} failed, "
                f"{len(report.waiting)} waiting (backoff or quarantine), "
                f"{len(report.quarantined)} newly quarantined"
            )
            for uid, why in list(report.failed.items())[:10]:
                err.print(f"  {safe(uid)}: {safe(why)}")
            return report.ok and filed.error is None

    if not run(main):
        raise typer.Exit(1)


def reindex(yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Rebuild this embedder's vectors from the graph: every episode's bookkeeping runs again."""
    from memory.write.reindex import reindex_all

    if not yes:
        typer.confirm(
            "Drop this embedder's vector collections and re-run every episode's bookkeeping?",
            abort=True,
        )

    from graph.bookkeeping import run_episode

    async def main() -> bool:
        async with opened(setup=False) as services:
            with progress_bar() as bar:
                task = bar.add_task("re-indexing", total=None)

                def tick(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                report = await reindex_all(services, run_episode, progress=tick)
            console.print(f"{len(report.done)} episodes re-indexed, {len(report.failed)} failed")
            for uid, why in list(report.failed.items())[:10]:
                err.print(f"  {safe(uid)}: {safe(why)}")
            with console.status("building the search indexes…"):
                await services.vectors.optimize()
            return report.ok

    if not run(main):
        raise typer.Exit(1)


def optimize() -> None:
    """Build the vector index's search structures now (HNSW graphs of Qdrant Edge).

    The embedded index searches new points exactly until they are built, which is correct but
    slows down for memories of many thousands of fragments; the build pauses the process (run
    it when the agent is idle). `mneme reindex` runs it too.
    """

    async def main() -> None:
        async with opened() as services:
            with console.status("building the search indexes…"):
                changed = await services.vectors.optimize()
            status = await services.vectors.describe()
            for c in status.collections:
                console.print(
                    f"{safe(c.name)}: {c.points} points, {c.indexed_vectors} vectors indexed"
                )
            console.print("done" if changed else "nothing to build")

    run(main)
