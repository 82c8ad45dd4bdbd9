"""`mneme eval retrieval`: the retrieval evaluation command (the harness is `bench.eval_retrieval`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cli.common import console, fail, progress_bar, safe

CATEGORY_ORDER = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
LABELS = {"overall": "overall (all)", "overall_no_adversarial": "overall w/o adversarial"}
DEV_BENCHMARKS = (
    "locomo10.memeval.jsonl",
    "longmemeval_s_dev30.memeval.jsonl",
    "beam500k_dev4.memeval.jsonl",
)
"""The three development benchmarks every retrieval change is judged on (in `--bench-dir`):
conversations between two people, user-assistant histories, long technical chats."""
METRICS = ("R@1", "R@5", "R@10", "R@20", "all@10", "hit@10", "NDCG@10")


def _rows(metrics: dict[str, dict[str, float]]) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in metrics]
    others = sorted(c for c in metrics if c not in CATEGORY_ORDER and not c.startswith("overall"))
    return [c for c in [*known, *others, "overall", "overall_no_adversarial"] if metrics.get(c)]


def summary_table(summary: dict[str, Any], title: str = "memeval retrieval") -> Table:
    """The per-category metrics table of an eval summary; with the reference retrievers scored,
    `!` marks a loss to the best single one (BM25 or dense) beyond noise."""
    from bench.references import floor_losses

    metrics: dict[str, dict[str, float]] = summary["metrics"]
    refs: dict[str, dict[str, dict[str, float]]] | None = summary.get("references")
    losses = {(c, m) for c, m, *_ in floor_losses(metrics, refs)} if refs else set()
    table = Table(title=title, show_lines=False)
    for column in ("category", "n", *METRICS):
        table.add_column(column, justify="left" if column == "category" else "right", no_wrap=True)
    for name in _rows(metrics):
        row = metrics[name]
        cells = [f"{row[k]:.3f}" + ("!" if (name, k) in losses else "") for k in METRICS]
        table.add_row(LABELS.get(name, name), str(int(row["n"])), *cells)
    return table


def references_table(summary: dict[str, Any], title: str) -> Table:
    """R@10 and NDCG@10 of the reference retrievers per category, beside mneme's, and mneme's
    margin to the best of them on each metric (negative: below the floor)."""
    from bench.references import REFERENCES

    metrics: dict[str, dict[str, float]] = summary["metrics"]
    refs: dict[str, dict[str, dict[str, float]]] = summary["references"]
    table = Table(title=f"{title}: R@10 / NDCG@10 beside the reference retrievers")
    for column in ("category", "mneme", *REFERENCES, "margin to best"):
        table.add_column(column, justify="left" if column == "category" else "right", no_wrap=True)
    for name in _rows(metrics):
        mine = metrics[name]
        theirs = [refs[r].get(name, {}) for r in REFERENCES]
        margin = "-"
        if any(theirs):
            r10 = mine["R@10"] - max(c["R@10"] for c in theirs if c)
            nd = mine["NDCG@10"] - max(c["NDCG@10"] for c in theirs if c)
            margin = f"{r10:+.3f} / {nd:+.3f}"
        table.add_row(
            LABELS.get(name, name),
            *(f"{c['R@10']:.3f} / {c['NDCG@10']:.3f}" if c else "-" for c in [mine, *theirs]),
            margin,
        )
    return table


def side_by_side(results: dict[str, dict[str, Any]]) -> Table:
    """One row per benchmark: mneme's overall figures, the best reference's, latency, floor."""
    from bench.references import REFERENCES, floor_losses

    table = Table(title="retrieval on every benchmark (overall w/o adversarial)")
    for column in (
        "benchmark",
        "n",
        "R@5",
        "R@10",
        "NDCG@10",
        "best ref R@10/NDCG",
        "p50 ms",
        "p95 ms",
        "below the floor",
    ):
        table.add_column(column, justify="left" if column == "benchmark" else "right")
    for name, summary in results.items():
        row = summary["metrics"]["overall_no_adversarial"]
        refs = summary.get("references")
        best = "-"
        losses = "-"
        if refs:
            r10 = max(refs[r]["overall_no_adversarial"]["R@10"] for r in REFERENCES)
            nd = max(refs[r]["overall_no_adversarial"]["NDCG@10"] for r in REFERENCES)
            best = f"{r10:.3f}/{nd:.3f}"
            found = floor_losses(summary["metrics"], refs)
            losses = ", ".join(f"{c} {m}" for c, m, *_ in found) or "none"
        lat = summary["latency_ms"]
        table.add_row(
            name,
            str(int(row["n"])),
            f"{row['R@5']:.3f}",
            f"{row['R@10']:.3f}",
            f"{row['NDCG@10']:.3f}",
            best,
            f"{lat['p50']:.1f}",
            f"{lat['p95']:.1f}",
            losses,
        )
    return table


def order_table(order: dict[str, dict[str, float]], title: str) -> Table:
    """The questions that carry `stale` turns (a fact that changed): the share whose answer
    ranks above every stale turn, and the share whose first turn is an answer, per category
    (for `past`, the older value above the newer)."""
    table = Table(title=f"{title}: answer ranked above the stale value")
    for col in ("category", "n", "above stale", "answer first"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for name, row in order.items():
        n = int(row["n"])
        table.add_row(
            name,
            str(n),
            f"{round(row['above_stale'] * n)}/{n} = {row['above_stale']:.3f}",
            f"{round(row['first'] * n)}/{n} = {row['first']:.3f}",
        )
    return table


def print_summary(
    summary: dict[str, Any], out: Console = console, title: str = "memeval retrieval"
) -> None:
    """Print the metrics table, latency and ingest time."""
    out.print(summary_table(summary, title))
    if summary.get("references"):
        out.print(references_table(summary, title))
    if summary.get("stale"):
        out.print(order_table(summary["stale"], title))
    lat = summary["latency_ms"]
    ing = summary["ingest"]
    out.print(
        f"retrieval latency: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms "
        f"(n={lat['n']}, recipe {summary['recipe']}"
        + (f", ablated: {summary['ablate']}" if summary.get("ablate") else "")
        + ")"
        + (
            f"; {m['cpus']} CPUs, load average {m['load_avg_1m']} at the end"
            if (m := summary.get("machine"))
            else ""
        )
    )
    out.print(
        f"ingest: {ing['seconds']:.1f} s for {ing['turns']} turns ({ing['ms_per_turn']:.1f} ms/turn; "
        f"{ing['episodes']} episodes, {ing['duplicates']} duplicate turns) over "
        f"{summary['conversations']} conversations; embedder {summary['embedder']}"
        + (f"; vectors: {summary['vectors']}" if summary.get("vectors") else "")
        + (f"; {ing['reused']} ingests reused from --store" if ing.get("reused") else "")
    )
    if ing.get("failed_episodes") or ing.get("failed_conversations"):
        out.print(
            f"[yellow]{ing.get('failed_episodes', 0)} episodes failed bookkeeping; "
            f"{len(ing.get('failed_conversations') or [])} conversations failed to ingest: "
            + "; ".join(
                f"#{c['conversation']} {safe(c['error'])}"
                for c in ing.get("failed_conversations") or []
            )
            + "[/]"
        )
    usage = summary.get("llm_usage")
    if usage:
        out.print(
            f"LLM (routing, extraction, beliefs, rerank; not in the latency): "
            f"{usage['llm_calls']} calls, {usage['input_tokens']} input + "
            f"{usage['output_tokens']} output tokens, {usage['fallbacks']} answers fell back to "
            "the heuristics"
        )


def dev_benchmarks(bench_dir: Path) -> list[Path]:
    """The development benchmarks in `bench_dir`; `ValueError` names a missing one."""
    paths = [bench_dir / name for name in DEV_BENCHMARKS]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ValueError(
            f"{', '.join(missing)} not found; pass memeval files, or --bench-dir with "
            f"{' and '.join(DEV_BENCHMARKS)}"
        )
    return paths


def retrieval(
    data: Annotated[
        list[Path] | None,
        typer.Argument(
            help="memeval .jsonl files (see docs/memeval.md); default: the development "
            "benchmarks in --bench-dir."
        ),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write rankings + summaries here.")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="auto (the router decides) or SIMPLE, TEMPORAL, ...")
    ] = "auto",
    ablate: Annotated[
        str | None,
        typer.Option(
            help="Turn one part off; several (comma-separated, or `all`): the full recipe, then "
            "each part off on the same stored ingests, and an ablation table."
        ),
    ] = None,
    llm: Annotated[bool, typer.Option("--llm", help="Use the configured LLM endpoint.")] = False,
    limit_conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations of each file.")
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            help="Keep each finished ingest here and reuse it while the data, the embedder "
            "and the write-path code are unchanged (questions run on a fresh copy). Not used "
            "with QDRANT_URL: the vectors then go to that server, each conversation a tenant.",
        ),
    ] = None,
    bench_dir: Annotated[
        Path, typer.Option(help="Where the development benchmarks are (when no file is given).")
    ] = Path("../shared/bench"),
    references: Annotated[
        bool,
        typer.Option(
            help="Also score plain BM25, plain dense and their RRF on the same questions "
            "(the floor mneme must not fall below)."
        ),
    ] = True,
    consolidate: Annotated[
        str | None,
        typer.Option(
            help="Run this level of sleep (micro, daily, deep) on each conversation's memory "
            "at its last session's time, before the questions.",
        ),
    ] = None,
) -> None:
    """Ingest each conversation into a fresh memory, ask its questions, score the rankings; with
    several files (by default the three development benchmarks), side by side."""
    from bench.eval_retrieval import run_eval
    from bench.memeval import EvalInputError
    from memory.embeddings.embedders import EmbedderError
    from memory.retrieval.recipes import PARTS, get_recipe
    from memory.settings import ConfigError
    from memory.sleep.levels import parse_level
    from memory.stores.base import StoreError

    try:
        if recipe.lower() != "auto":
            get_recipe(recipe)
        if consolidate:
            parse_level(consolidate)
        parts = ablation_parts(ablate, PARTS)
        files = list(data) if data else dev_benchmarks(bench_dir)
    except ValueError as exc:
        raise fail(str(exc)) from None

    runs: dict[str | None, dict[str, Any]] = {part: {} for part in parts}
    with progress_bar(transient=True) as bar:
        task = bar.add_task("starting", total=None)
        for path in files:
            name = path.name.removesuffix(".jsonl").removesuffix(".memeval")
            for part in parts:
                label = f"{name} -{part}" if part and len(parts) > 1 else name

                def tick(what: str, done: int, total: int, label: str = label) -> None:
                    bar.update(task, description=f"{label}: {what}", completed=done, total=total)

                try:
                    runs[part][name] = asyncio.run(
                        run_eval(
                            path,
                            recipe_name=recipe,
                            part=part,
                            llm=llm,
                            limit_conversations=limit_conversations,
                            progress=tick,
                            store=store,
                            consolidate_level=consolidate,
                            # the floor is the full recipe's; ablated runs skip it
                            references=references and (part is None or len(parts) == 1),
                        )
                    )
                except (EvalInputError, ConfigError, StoreError, EmbedderError) as exc:
                    raise fail(str(exc)) from None
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        doc: dict[str, Any] = {
            "benchmarks": {name: r.as_json() for name, r in runs[parts[0]].items()}
        }
        if len(parts) > 1:
            doc["ablation"] = {
                str(part): {name: r.summary for name, r in results.items()}
                for part, results in runs.items()
                if part is not None
            }
        json_out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    results = runs[parts[0]]
    for name, result in results.items():
        print_summary(result.summary, title=name)
    if len(results) > 1:
        console.print(side_by_side({n: r.summary for n, r in results.items()}))
    if len(parts) > 1:
        console.print(
            ablation_table({p: {n: r.summary for n, r in res.items()} for p, res in runs.items()})
        )
    if json_out is not None:
        console.print(f"rankings and summaries written to {json_out}")


def ablation_parts(ablate: str | None, known: Any) -> list[str | None]:
    """The runs an `--ablate` value asks for: [None] (full recipe), [part], or the full recipe
    and then each part of a comma-separated list (`all`: every part); ValueError names the
    parts."""
    if not ablate:
        return [None]
    names = sorted(known) if ablate.strip().lower() == "all" else ablate.split(",")
    names = [n.strip() for n in names if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"unknown part {', '.join(unknown)!r}; use one of {sorted(known)}")
    runs: list[str | None] = [None, *dict.fromkeys(names)]
    return runs[1:] if len(names) == 1 else runs


def ablation_table(runs: dict[str | None, dict[str, dict[str, Any]]]) -> Table:
    """R@10 / NDCG@10 (overall w/o adversarial) of the full recipe and of each part off, per
    benchmark, with the change against the full recipe."""
    full = runs[None]
    table = Table(title="ablation: R@10 / NDCG@10 overall w/o adversarial (change vs full)")
    table.add_column("part off", justify="left")
    for name in full:
        table.add_column(name, justify="right")
    for part, results in runs.items():
        cells = []
        for name, base in full.items():
            row = results[name]["metrics"]["overall_no_adversarial"]
            ref = base["metrics"]["overall_no_adversarial"]
            text = f"{row['R@10']:.3f} / {row['NDCG@10']:.3f}"
            if part is not None:
                text += (
                    f" ({row['R@10'] - ref['R@10']:+.3f} / {row['NDCG@10'] - ref['NDCG@10']:+.3f})"
                )
            cells.append(text)
        table.add_row("none (full)" if part is None else part, *cells)
    return table


def convert(
    benchmark: Annotated[str, typer.Argument(help="locomo, longmemeval or demo.")],
    raw: Annotated[
        Path,
        typer.Argument(
            help="LoCoMo's data/locomo10.json, or LongMemEval's longmemeval_s_cleaned.json "
            "(or a directory of its per-question JSON files), or a conversation in the demo's "
            "format (cli/data/sample_conversation.json)."
        ),
    ],
    out: Annotated[Path, typer.Argument(help="The memeval .jsonl file to write.")],
) -> None:
    """Write a benchmark's published files in the memeval format (docs/memeval.md)."""
    from bench.convert import ConvertError
    from bench.convert import convert as write_memeval

    try:
        n = write_memeval(benchmark.lower(), raw, out)
    except ConvertError as exc:
        raise fail(str(exc)) from None
    console.print(f"{n} conversations written to {out}")


NEWEST = "rerank.newest=true,rerank.oldest=true"
"""The `--variant` that turns on the newest/oldest step (docs/adr/0152-newest-statement-first.md)."""


def recipe_changes(text: str) -> dict[str, object]:
    """`step.field=value,...` as recipe changes (values read as JSON: true, 0.5, "x"); ValueError
    names a malformed or unknown setting."""
    from memory.retrieval.recipes import SIMPLE, changed

    changes: dict[str, object] = {}
    for item in (p.strip() for p in text.split(",")):
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{item!r} is not step.field=value (e.g. {NEWEST})")
        try:
            changes[name.strip()] = json.loads(raw.strip())
        except ValueError:
            changes[name.strip()] = raw.strip()
    changed(SIMPLE, changes)  # names an unknown setting
    return changes


def answers_table(summaries: dict[str, dict[str, Any]], title: str) -> Table:
    """Per category, each variant's answered share (match, and for `current` not the stale
    value) with how many of those rest on a short match string only ("yes", "no": read them),
    how often the stale value appears at all and how many replies hold both."""
    table = Table(title=f"{title}: the agent's offline replies")
    table.add_column("category", justify="left")
    table.add_column("n", justify="right")
    for name in summaries:
        table.add_column(f"{name}: answered", justify="right")
        table.add_column("stale / both", justify="right")
    first = next(iter(summaries.values()))["categories"]
    for category, head in first.items():
        cells = []
        for summary in summaries.values():
            row = summary["categories"].get(category) or {"n": 0, "answered": 0, "share": 0.0}
            short = f" ({row['short']} short)" if row.get("short") else ""
            cells.append(f"{row['answered']}/{row['n']} = {row['share']:.3f}{short}")
            stale = f"{row['stale']} / {row['both']}" if category in ("current", "all") else "-"
            cells.append(stale)
        table.add_row(category, str(head["n"]), *cells)
    return table


def causes_table(summaries: dict[str, dict[str, Any]], title: str) -> Table:
    """Why the replies missed, per category, for each variant (`bench.eval_answers.CAUSES`)."""
    from bench.eval_answers import CAUSES

    table = Table(title=f"{title}: why the misses missed")
    table.add_column("variant / category", justify="left")
    for cause in CAUSES:
        table.add_column(cause, justify="right")
    for name, summary in summaries.items():
        for category, row in summary["categories"].items():
            if row["n"] > row["answered"]:
                table.add_row(
                    f"{name} / {category}", *(str(row["causes"].get(c, 0)) for c in CAUSES)
                )
    return table


def answers(
    data: Annotated[list[Path], typer.Argument(help="memeval .jsonl files with `match` strings.")],
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write every reply, verdict and summary here.")
    ] = None,
    variant: Annotated[
        str | None,
        typer.Option(
            help="Also ask with these recipe settings changed (`step.field=value,...`), as a "
            f"second column; e.g. `{NEWEST}` (the newest/oldest step, ADR 0152).",
        ),
    ] = None,
    limit_conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations of each file.")
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            help="Reuse the ingests `mneme eval retrieval --store` keeps there (and keep the "
            "ones made here) while the data and the write path are unchanged."
        ),
    ] = None,
) -> None:
    """Ask the agent (offline, no chat model) every question of each conversation on that
    conversation's memory and score its replies by the questions' `match` strings (and, for
    `current`, not giving `stale_value`): bench/data/README.md, "agent, offline"."""
    import os

    from bench.eval_answers import VectorsChanged, run_answers
    from bench.memeval import EvalInputError
    from memory.embeddings.embedders import EmbedderError
    from memory.settings import ConfigError
    from memory.stores.base import StoreError

    try:
        variants: dict[str, dict[str, object] | None] = {"agent": None}
        if variant:
            variants[variant] = recipe_changes(variant)
    except ValueError as exc:
        raise fail(str(exc)) from None
    results: dict[str, Any] = {}
    with progress_bar(transient=True) as bar:
        task = bar.add_task("starting", total=None)
        for path in data:
            name = path.name.removesuffix(".jsonl").removesuffix(".memeval")

            def tick(what: str, done: int, total: int, name: str = name) -> None:
                bar.update(task, description=f"{name}: {what}", completed=done, total=total)

            try:
                results[name] = asyncio.run(
                    run_answers(
                        path,
                        variants=variants,
                        limit_conversations=limit_conversations,
                        store=store,
                        progress=tick,
                    )
                )
            except (EvalInputError, ConfigError, StoreError, EmbedderError, VectorsChanged) as exc:
                raise fail(str(exc)) from None
    machine = {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    for name, result in results.items():
        result.summary["machine"] = machine
        console.print(answers_table(result.summary["variants"], name))
        console.print(causes_table(result.summary["variants"], name))
    console.print(
        f"{machine['cpus']} CPUs, load average {machine['load_avg_1m']} at the end; "
        f"ingests reused: {sum(r.summary['reused_ingests'] for r in results.values())}"
    )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"benchmarks": {name: r.as_json() for name, r in results.items()}}
        json_out.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
        console.print(f"replies and summaries written to {json_out}")
