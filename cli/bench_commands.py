"""`mneme bench write | search | turn | ... | cluster | replicas`: benchmarks of the memory layer
(numbers, not tests).

Every benchmark prints the machine's CPU count and load with its timings: these machines are
shared and noisy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from bench.write import machine
from cli.common import console, progress_bar, run


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
    sizes: str = typer.Option(
        "2000", help="Comma-separated point counts (10000 and more: minutes, mostly HNSW build)."
    ),
    recall: int = typer.Option(
        0, min=0, help="Also measure recall@10 against exact search on this many real embeddings."
    ),
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the whole report here.")
    ] = None,
) -> None:
    """The embedded vector index (Qdrant Edge): upsert rate, tenant-filtered search p50/p95 before
    and after the HNSW build, build time, memory and disk per 100k points; recall@10 on request."""
    from bench.vectors import bench_vectors

    parsed = _sizes(sizes)

    async def main() -> dict[str, Any]:
        return await bench_vectors(parsed, recall_points=recall or None, recall_tenants=(1, 10))

    report = run(main)
    table = Table(title=f"Qdrant Edge, {report['synthetic'][0]['vectors'] if parsed else ''}")
    for col in ("points", "upsert/s", "mode", "p50 ms", "p95 ms", "p50 built", "p95 built"):
        table.add_column(col, justify="right")
    for row in report["synthetic"]:
        for mode in ("dense", "sparse", "hybrid"):
            before, after = row["search_before_optimize"][mode], row["search_after_optimize"][mode]
            table.add_row(
                f"{row['points']:,}",
                f"{row['upsert_points_per_s']:,}",
                mode,
                f"{before['p50_ms']:.1f}",
                f"{before['p95_ms']:.1f}",
                f"{after['p50_ms']:.1f}",
                f"{after['p95_ms']:.1f}",
            )
        console.print(
            f"{row['points']:,} points: HNSW build {row['optimize_s']} s, "
            f"{row['rss_mb_per_100k']} MB RSS and {row['disk_mb_per_100k']} MB disk per 100k"
        )
    console.print(table)
    for r in report.get("recall", []):
        best = ", ".join(f"ef {e['hnsw_ef']}: {e['recall_at_10']}" for e in r["by_ef"])
        console.print(
            f"recall@10 at {r['points']:,} real embeddings, {r['tenants']} tenants: {best}"
        )
    console.print(machine())
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=2), encoding="utf-8")


def turn(
    sizes: str = typer.Option("1000", help="Comma-separated episode counts (10000: minutes)."),
    turns: int = typer.Option(30, min=1, help="Agent turns per size."),
    slow_llm: float | None = typer.Option(
        None,
        "--slow-llm",
        min=0,
        help="Instead: time to the reply's first token with a local stub chat model that answers "
        "after this many seconds, with the turn's latency budget and without one.",
    ),
    budget: float | None = typer.Option(
        None,
        "--budget",
        min=0,
        help="With --slow-llm: the budget to try (default MNEME_TURN_BUDGET_S).",
    ),
) -> None:
    """Per-turn time in the memory layer (no LLM, no embedding) at the given sizes; with
    --slow-llm, time to first token with a slow chat model."""
    if slow_llm is not None:
        from bench.ttft import bench_ttft

        run(lambda: bench_ttft(delay_s=slow_llm, budget_s=budget, console=console))
        return
    from bench.turn import bench_turn

    parsed = _sizes(sizes)
    run(lambda: bench_turn(sizes=parsed, turns=turns, console=console))


def retrieve(
    sizes: str = typer.Option(
        "1000", help="Comma-separated derivative counts (10000 and more: minutes)."
    ),
    queries: int = typer.Option(20, min=1, help="Questions per recipe and size."),
    long: bool = typer.Option(True, "--long/--short-only", help="Also a long-turn fixture."),
) -> None:
    """The whole `retrieve` (query embedding excluded) at scale on the embedded default."""
    from bench.retrieve import bench_retrieve

    parsed = _sizes(sizes)
    run(lambda: bench_retrieve(sizes=parsed, queries=queries, long=long, console=console))


def faults(
    turns: int = typer.Option(50, min=1, help="Agent turns to acknowledge (1000: minutes)."),
    kills: int = typer.Option(3, min=0, help="SIGKILLs of the agent process at random points."),
    seed: int = typer.Option(1, help="Seed of the fault schedule."),
    work: str = typer.Option("", help="Working directory (default: a new temporary one)."),
    hostile: bool = typer.Option(
        True,
        "--hostile/--no-hostile",
        help="A second tenant attacks every tenth turn (forged command, uid squat by import, "
        "refused records mid-outbox); the audit checks the victim lost nothing to it.",
    ),
) -> None:
    """Acknowledged turns under random SIGKILLs and store outages, then an audit (lost, dups)."""
    import json
    import os
    import tempfile
    from pathlib import Path

    from bench.faults import bench_faults

    where = Path(work) if work else Path(tempfile.mkdtemp(prefix="mneme-faults-"))
    report = run(lambda: bench_faults(turns, kills, seed, where, hostile))
    one, five, _ = os.getloadavg()
    console.print(json.dumps(report.as_dict(), indent=2))
    console.print(f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f}; work dir {where}")
    if report.failed:
        raise typer.Exit(1)


def _report(report: dict[str, Any], ok: bool, json_out: Path | None) -> None:
    """Print a fault bench's report as JSON (and write it to `json_out`); exit 1 unless `ok`."""
    text = json.dumps(report, indent=2)
    console.print(text)
    if json_out is not None:
        json_out.write_text(text, encoding="utf-8")
    if not ok:
        raise typer.Exit(1)


def cluster(
    nodes: int = typer.Option(3, min=1, help="Qdrant nodes (1: the single-node baseline)."),
    turns: int = typer.Option(60, min=3, help="Turns to write through the write path."),
    tenants: int = typer.Option(4, min=1, help="Tenants the turns are spread over."),
    kill: bool = typer.Option(
        True, "--kill/--no-kill", help="SIGKILL a node at 1/3, restart at 2/3."
    ),
    kill_node: int = typer.Option(
        0, min=-1, help="Which node (0: the first in QDRANT_URL; -1: random)."
    ),
    neo4j: bool = typer.Option(False, "--neo4j", help="Graph store: the Neo4j at NEO4J_URI."),
    seed: int = typer.Option(1, help="Seed of the searches."),
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report here.")] = None,
) -> None:
    """Ingest and search on a Qdrant cluster started here (replication 2) while a node is killed
    and restarted; then lost, duplicates, searches while down, replica consistency, doctor."""
    from bench.cluster import bench_cluster

    report = run(
        lambda: bench_cluster(
            nodes=nodes,
            turns=turns,
            tenants=tenants,
            kill=kill,
            kill_node=None if kill_node < 0 else kill_node,
            neo4j=neo4j,
            seed=seed,
        )
    )
    _report(report.as_dict(), report.ok, json_out)


def replicas(
    replicas: int = typer.Option(3, min=1, help="mneme worker processes on the shared stores."),
    turns: int = typer.Option(60, min=4, help="Agent turns to acknowledge."),
    tenants: int = typer.Option(6, min=1, help="Tenants the turns are spread over."),
    kill: bool = typer.Option(True, "--kill/--no-kill", help="Kill one replica mid-stream."),
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report here.")] = None,
) -> None:
    """Several mneme replicas on one memory (the Neo4j at NEO4J_URI through `neo4j://`, else one
    SQLite file; a Qdrant server started here), one killed mid-stream; then lost, duplicates,
    double bookkeeping, overlapping consolidations, the dead one's outbox, reply latency."""
    import os

    from bench.replicas import bench_replicas

    report = run(
        lambda: bench_replicas(
            replicas=replicas,
            turns=turns,
            tenants=tenants,
            kill=kill,
            neo4j_uri=os.environ.get("NEO4J_URI"),
        )
    )
    _report(report.as_dict(), report.ok, json_out)


def rest(
    fragments: int = typer.Option(
        18_000,
        "--fragments",
        min=10,
        help="Derivative points of the benched user (~0.55 turns each).",
    ),
    queries: int = typer.Option(200, "--queries", min=10, help="Searches to time."),
) -> None:
    """Search latency through REST (`GET /memories`) on a filled embedded memory, through a
    real `langgraph dev` (p50/p95 from the client); prints episodes, CPUs and load."""
    from bench.rest import bench_rest

    report = bench_rest(fragments, queries)
    console.print(json.dumps(report, indent=2))


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


def sleep(
    episodes: int = typer.Option(2000, min=100, help="Turns in the simulated year."),
    seed: int = typer.Option(7, help="Seed of the generator."),
    deep_every: int = typer.Option(30, min=1, help="Days between deep consolidations."),
    scale: int = typer.Option(
        0,
        min=0,
        help="Instead: time one deep consolidation of this many turns written straight to the "
        "graph (no bookkeeping), a year on.",
    ),
    ranking: str = typer.Option(
        "agent",
        help="Ranking of the weekly questions: `agent` (the agent's), `design` (with "
        "docs/design.md's state weights once sleep has run) or `relevance` (the relevance alone).",
    ),
) -> None:
    """A simulated year with and without forgetting: vectors kept, recall@10, evidence left,
    and recall after months of use of used, changed and never-asked facts by both rankings."""
    import json

    from bench.sleep import RANKINGS, bench_deep_scale, bench_sleep

    if ranking not in RANKINGS:
        raise typer.BadParameter(f"use one of {sorted(RANKINGS)}", param_hint="--ranking")
    if scale:
        console.print_json(json.dumps(run(lambda: bench_deep_scale(scale, seed=seed))))
        return

    with progress_bar(transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def tick(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        report = run(
            lambda: bench_sleep(
                episodes=episodes,
                seed=seed,
                deep_every_days=deep_every,
                progress=tick,
                ranking=ranking,
            )
        )
    console.print_json(json.dumps(report.as_dict()))
    if any(report.unsupported.values()):
        raise typer.Exit(1)


def directives(
    file: str = typer.Argument(
        "", help="Labelled turns (JSON lines); default: bench/data/directives.jsonl."
    ),
    as_json: str = typer.Option("", "--json", help="Also write the report to this file."),
) -> None:
    """Which turns become a standing instruction and which a belief, offline: precision and
    recall of each against the file's labels (exit 1 when either has a wrong turn)."""
    from bench.directives import DEFAULT, bench_directives

    report = run(lambda: bench_directives(Path(file) if file else DEFAULT))
    if as_json:
        Path(as_json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name in ("directive", "belief"):
        s = report[name]
        console.print(
            f"{name}: precision {s['precision']} recall {s['recall']} "
            f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']}, tn {s['tn']})"
        )
        for wrong in s["wrong"]:
            console.print(f"  {wrong}", markup=False)
    console.print(f"{report['turns']} turns in {report['seconds']} s; {machine()}")
    if report["directive"]["wrong"] or report["belief"]["wrong"]:
        raise typer.Exit(1)
