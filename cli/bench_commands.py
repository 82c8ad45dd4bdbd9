"""`mneme bench write | search | turn`: benchmarks of the memory layer (numbers, not tests).

Every benchmark prints the machine's CPU count and load with its timings: these machines are
shared and noisy.
"""

from __future__ import annotations

import typer

from cli.common import console, run


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a comma-separated list of counts") from None
    if not sizes or any(n <= 0 for n in sizes):
        raise typer.BadParameter("sizes must be positive counts, e.g. 1000,10000")
    return sizes


def write(
    n: int = typer.Option(500, min=1, help="Episodes to write."),
    index_n: int = typer.Option(200, "--index", min=1, help="Episodes to index for throughput."),
) -> None:
    """Durable `remember` latency p50/p95 and indexing throughput on the configured stores."""
    from bench.write import bench_write

    run(lambda: bench_write(n=n, index_n=index_n, console=console))


def search(
    sizes: str = typer.Option("10000,100000", help="Comma-separated derivative counts."),
    queries: int = typer.Option(100, min=1, help="Queries per configuration."),
) -> None:
    """Vector search p50/p95 in local mode at the given sizes, with and without tenant filter."""
    from bench.search import bench_search

    parsed = _sizes(sizes)
    run(lambda: bench_search(sizes=parsed, queries=queries, console=console))


def turn(
    sizes: str = typer.Option("1000,10000", help="Comma-separated episode counts."),
    turns: int = typer.Option(50, min=1, help="Agent turns per size."),
) -> None:
    """Per-turn time in the memory layer (no LLM, no embedding) at the given sizes."""
    from bench.turn import bench_turn

    parsed = _sizes(sizes)
    run(lambda: bench_turn(sizes=parsed, turns=turns, console=console))


def faults(
    turns: int = typer.Option(1000, min=1, help="Agent turns to acknowledge."),
    kills: int = typer.Option(25, min=0, help="SIGKILLs of the agent process at random points."),
    seed: int = typer.Option(1, help="Seed of the fault schedule."),
    work: str = typer.Option("", help="Working directory (default: a new temporary one)."),
) -> None:
    """Acknowledged turns under random SIGKILLs and store outages, then an audit (lost, dups)."""
    import json
    import os
    import tempfile
    from pathlib import Path

    from bench.faults import bench_faults

    where = Path(work) if work else Path(tempfile.mkdtemp(prefix="mneme-faults-"))
    report = run(lambda: bench_faults(turns, kills, seed, where))
    one, five, _ = os.getloadavg()
    console.print(json.dumps(report.as_dict(), indent=2))
    console.print(f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f}; work dir {where}")
    if report.lost or report.duplicates or report.orphans or not report.doctor_ok:
        raise typer.Exit(1)


def poison(
    files: list[str] = typer.Argument(  # noqa: B008 - typer reads its defaults this way
        ..., help="memeval files (e.g. ../shared/bench/*.jsonl)."
    ),
) -> None:
    """Every offline bookkeeping heuristic on every turn of the files; count what raises."""
    import os
    from pathlib import Path

    from bench.poison import bench_poison

    report = bench_poison([Path(f) for f in files])
    one, five, _ = os.getloadavg()
    console.print(
        f"{report.episodes} episodes from {len(report.files)} files checked in "
        f"{report.seconds:.1f} s: {len(report.failed)} made a heuristic raise; "
        f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f}"
    )
    for label, why in list(report.failed.items())[:20]:
        console.print(f"  {label}: {why}", markup=False)
    if report.failed:
        raise typer.Exit(1)
