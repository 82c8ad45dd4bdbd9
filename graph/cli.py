"""The `mneme` command line: setup, doctor, sweep, reindex, bench (and the agent's commands).

Every command reads settings from the environment, opens the services it needs once, closes
them on the way out, and turns store errors into one readable line and a non-zero exit code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memory.settings import ConfigError, load_settings
from memory.stores.base import StoreError

app = typer.Typer(
    name="mneme",
    help="mneme: a LangGraph agent with long-term, human-like memory.",
    no_args_is_help=True,
    add_completion=False,
)
bench_app = typer.Typer(help="Benchmarks of the memory layer (numbers, not tests).")
app.add_typer(bench_app, name="bench")

console = Console()
err = Console(stderr=True)
T = TypeVar("T")


def run(main: Callable[[], Coroutine[object, object, T]]) -> T:
    """Run an async command; print store and settings errors as one line and exit 2."""
    try:
        return asyncio.run(main())
    except (ConfigError, StoreError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None


def progress_bar() -> Progress:
    """The progress bar every long command uses."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level."),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@app.command()
def setup() -> None:
    """Create the graph schema and the vector collections (idempotent)."""
    from memory.services import Services

    async def main() -> None:
        settings = load_settings()
        services = await Services.open(settings, setup=True)
        try:
            version = await services.graph.schema_version()
            console.print(
                f"graph: {services.graph.backend} schema v{version}; vectors: "
                f"{settings.resolved_qdrant_location} ({services.embedder.fingerprint})"
            )
        finally:
            await services.close()

    run(main)


@app.command()
def doctor() -> None:
    """Check settings, connectivity, schema and graph/vector consistency; exit 1 if unwell."""
    from memory.doctor import run_doctor

    report = run(run_doctor)
    for check in report.checks:
        mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]"
        console.print(f"{mark} {escape(check.name)}: {escape(check.detail)}")
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def sweep(user: str | None = typer.Option(None, "--user", help="Only this tenant.")) -> None:
    """Run bookkeeping for every episode it left unfinished (index, extract, link)."""
    from memory.episodes import sweep as sweep_episodes
    from memory.schema import Episode
    from memory.services import Services
    from nodes.bookkeeping import process_episode

    async def main() -> bool:
        services = await Services.open(load_settings())
        try:
            with progress_bar() as bar:
                task = bar.add_task("sweeping", total=None)

                def tick(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                async def process(episode: Episode) -> None:
                    await process_episode(services, episode.tenant, episode.uid)

                report = await sweep_episodes(services, tenant=user, progress=tick, process=process)
            console.print(f"{len(report.done)} episodes completed, {len(report.failed)} failed")
            for uid, why in list(report.failed.items())[:10]:
                err.print(f"  {uid}: {why}")
            return report.ok
        finally:
            await services.close()

    if not run(main):
        raise typer.Exit(1)


@app.command()
def reindex(
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
) -> None:
    """Drop every vector collection and rebuild them from the graph with the current embedder."""
    from memory.reindex import reindex_all
    from memory.services import Services

    if not yes:
        typer.confirm("Drop all vector collections and re-index every episode?", abort=True)

    async def main() -> bool:
        settings = load_settings()
        services = await Services.open(settings, setup=False)
        try:
            with progress_bar() as bar:
                task = bar.add_task("re-indexing", total=None)

                def tick(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                report = await reindex_all(services, progress=tick)
            console.print(f"{len(report.done)} episodes re-indexed, {len(report.failed)} failed")
            return report.ok
        finally:
            await services.close()

    if not run(main):
        raise typer.Exit(1)


@bench_app.command("write")
def bench_write(
    n: int = typer.Option(500, help="Episodes to write."),
    index_n: int = typer.Option(200, "--index", help="Episodes to index for throughput."),
) -> None:
    """Durable `remember` latency p50/p95 and indexing throughput on the configured stores."""
    from bench.write import bench_write as main

    run(lambda: main(n=n, index_n=index_n, console=console))


@bench_app.command("search")
def bench_search(
    sizes: str = typer.Option("10000,100000", help="Comma-separated derivative counts."),
    queries: int = typer.Option(100, help="Queries per configuration."),
) -> None:
    """Vector search p50/p95 in local mode at the given sizes, with and without tenant filter."""
    from bench.search import bench_search as main

    parsed = [int(s) for s in sizes.split(",") if s.strip()]
    run(lambda: main(sizes=parsed, queries=queries, console=console))


def main() -> None:
    """Console-script entry point."""
    app()


def _register_commands() -> None:
    """Add the commands of the agent, the evaluation harness and the belief surfaces."""
    from graph import cli_agent, cli_beliefs, cli_eval

    for module in (cli_agent, cli_eval, cli_beliefs):
        module.register(app)


_register_commands()
