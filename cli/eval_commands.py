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


def summary_table(summary: dict[str, Any]) -> Table:
    """The per-category metrics table of an eval summary."""
    metrics: dict[str, dict[str, float]] = summary["metrics"]
    table = Table(title="memeval retrieval", show_lines=False)
    for column in ("category", "n", "R@1", "R@5", "R@10", "R@20", "all@10", "hit@10", "NDCG@10"):
        table.add_column(column, justify="left" if column == "category" else "right", no_wrap=True)
    known = [c for c in CATEGORY_ORDER if c in metrics]
    others = sorted(c for c in metrics if c not in CATEGORY_ORDER and not c.startswith("overall"))
    for name in [*known, *others, "overall", "overall_no_adversarial"]:
        row = metrics.get(name)
        if not row:
            continue
        table.add_row(
            LABELS.get(name, name),
            str(int(row["n"])),
            *(
                f"{row[k]:.3f}"
                for k in ("R@1", "R@5", "R@10", "R@20", "all@10", "hit@10", "NDCG@10")
            ),
        )
    return table


def print_summary(summary: dict[str, Any], out: Console = console) -> None:
    """Print the metrics table, latency and ingest time."""
    out.print(summary_table(summary))
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


def retrieval(
    data: Annotated[Path, typer.Argument(help="A memeval .jsonl file (see docs/memeval.md).")],
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write rankings + summary here.")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="auto (the router decides) or SIMPLE, TEMPORAL, ...")
    ] = "auto",
    ablate: Annotated[str | None, typer.Option(help="Turn one part off.")] = None,
    llm: Annotated[bool, typer.Option("--llm", help="Use the configured LLM endpoint.")] = False,
    limit_conversations: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations.")
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            help="Keep each finished ingest here and reuse it while the data, the embedder "
            "and the write-path code are unchanged (questions run on a fresh copy).",
        ),
    ] = None,
    consolidate: Annotated[
        str | None,
        typer.Option(
            help="Run this level of sleep (micro, daily, deep) on each conversation's memory "
            "at its last session's time, before the questions.",
        ),
    ] = None,
) -> None:
    """Ingest each conversation into a fresh memory, ask its questions, score the rankings."""
    from bench.eval_retrieval import run_eval
    from bench.memeval import EvalInputError
    from memory.consolidation import parse_level
    from memory.recipes import PARTS, get_recipe
    from memory.settings import ConfigError
    from memory.stores.base import StoreError

    try:
        if recipe.lower() != "auto":
            get_recipe(recipe)
        if consolidate:
            parse_level(consolidate)
        if ablate and ablate not in PARTS:
            raise ValueError(f"unknown part {ablate!r}; use one of {sorted(PARTS)}")
    except ValueError as exc:
        raise fail(str(exc)) from None

    with progress_bar(transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def tick(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            result = asyncio.run(
                run_eval(
                    data,
                    recipe_name=recipe,
                    part=ablate,
                    llm=llm,
                    limit_conversations=limit_conversations,
                    progress=tick,
                    store=store,
                    consolidate_level=consolidate,
                )
            )
        except (EvalInputError, ConfigError, StoreError) as exc:
            raise fail(str(exc)) from None
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result.as_json(), indent=1), encoding="utf-8")
    print_summary(result.summary)
    if json_out is not None:
        console.print(f"rankings and summary written to {json_out}")


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
