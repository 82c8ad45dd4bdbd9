"""`mneme eval retrieval`: the memeval protocol (docs/memeval.md) through mneme's own paths.

For each conversation: a fresh embedded memory and tenant, ingested through the agent's write
path (`bench.eval_ingest`, kept between runs with `--store`; with `QDRANT_URL` the vectors go to
that server instead, each conversation a tenant of its own there, and nothing is kept); every question asked through the
read path (the router's decision planned into a recipe by `nodes.retrieve.plan`, then
`retrieve`, as the agent's retrieve node does), with the question's date as now. Offline (the
default) the router and extraction are the agent's heuristics; with `--llm` the configured model
routes, extracts and reranks (the rerank node's `rank`), and the latency still counts only the
retrieval.

How a turn becomes an episode is `bench.memeval` (shared with `mneme ingest`). A turn whose
content the tenant already holds maps to the existing episode (dedup); retrieving that
episode ranks all its turns.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.eval_ingest import (
    Bookkeep,
    Ingested,
    clear_tenant_vectors,
    default_bookkeep,
    eval_settings,
    ingest,
    ingest_key,
    load_ingest,
    save_ingest,
    stored_dir,
)
from bench.memeval import SESSION_GAP, Conversation, EvalInputError, parse_date, read_memeval
from bench.metrics import (
    KS,
    Ordered,
    Scored,
    percentile,
    question_metrics,
    stale_order,
    summarise,
    summarise_order,
)
from bench.references import reference_metrics
from graph.consolidation import run_consolidation
from memory.embeddings.embedders import Embedder, build_embedder
from memory.retrieval.recipes import Recipe, ablate, get_recipe
from memory.retrieval.retrieve import retrieve
from memory.services import ChatModels, Services
from memory.services.usage import Usage
from memory.settings import ConfigError, Settings, load_settings
from memory.sleep.levels import parse_level
from memory.write.sessions import Summariser, summarise_sessions

if TYPE_CHECKING:
    from nodes.state import Route

__all__ = ["EvalInputError", "EvalResult", "Ingested", "ranked_turns", "read_memeval", "run_eval"]

MIN_RANKED = 20


Ranked = Sequence[tuple[str, float, Mapping[str, float]]]
"""(episode uid, score, side scores) of retrieved episodes, best first."""
SIDE_INDEX = {"user": 0, "agent": 1}
"""Position of each side's turn in a two-turn (user + assistant) episode's turn ids."""


def ranked_turns(found: Ranked, ingested: Ingested, minimum: int = MIN_RANKED) -> list[str]:
    """Turn ids of the retrieved episodes, best first; padded (latest turns first) to `minimum`.

    An episode's turns take its score, except that a user + assistant episode with side scores
    (`Candidate.sides`) ranks each turn at its side's score; ties keep the retrieval order.
    """
    items: list[tuple[float, int, int, str]] = []
    for rank, (uid, score, sides) in enumerate(found):
        turns = ingested.turn_ids.get(uid, [])
        for position, turn in enumerate(turns):
            side = next((s for s, i in SIDE_INDEX.items() if i == position), None)
            value = sides.get(side, score) if len(turns) == 2 and side else score
            items.append((value, rank, position, turn))
    items.sort(key=lambda x: (-x[0], x[1], x[2]))
    out: list[str] = []
    seen: set[str] = set()
    for *_, turn in items:
        if turn not in seen:
            seen.add(turn)
            out.append(turn)
    if len(out) < minimum:
        for turn in reversed(ingested.order):
            if len(out) >= minimum:
                break
            if turn not in seen:
                seen.add(turn)
                out.append(turn)
    return out


def scored_question(q: Mapping[str, Any], ranked: list[str]) -> tuple[Scored, Ordered | None]:
    """A question's metrics under its category and, when it carries `stale` turns (a fact that
    changed), whether its answer ranks above them (`bench.metrics.stale_order`)."""
    category = str(q.get("category") or "uncategorised")
    row = Scored(category, question_metrics(ranked, q["evidence"]))
    if not q.get("stale"):
        return row, None
    return row, stale_order(category, ranked, q["evidence"], q["stale"])


def choose_recipe(
    question: str, recipe_name: str, part: str | None, route: Route | None = None
) -> tuple[Recipe, list[str], dict[str, float], int]:
    """Recipe, queries, credibility weights and result count (`tasks.route.result_count`) for
    a question, planned as the agent plans them (`nodes.retrieve.plan`) from `route` (default:
    the offline router's decision); a fixed recipe name replaces the router's choice (and its
    count by that kind's), `part` turns one part off."""
    from nodes.retrieve import plan
    from nodes.state import route_state
    from tasks.route import heuristic_route, result_count

    if route is None:
        route = route_state(heuristic_route(question))
    recipe, queries, weights = plan(route, question)
    count = result_count(route)
    if recipe_name.lower() != "auto":
        recipe, queries = get_recipe(recipe_name), [question]
        count = result_count({"kind": recipe_name.upper()})
    if part:
        recipe = ablate(recipe, part)
    return recipe, queries, weights, count


async def llm_route(services: Services, question: str, usage: Any) -> Route:
    """The agent's LLM router on one question (the heuristic when the endpoint fails)."""
    from nodes.state import route_state
    from tasks.route import assess_turn

    assessment = await assess_turn(question, [], chat=services.chat, usage=usage)
    return route_state(assessment.route)


async def llm_rerank(
    services: Services, question: str, found: Sequence[Any], route: Route, usage: Any
) -> list[str]:
    """Episode uids in the agent's rerank order: what the rerank node keeps first (the model's
    listwise order), then the rest of the candidates in score order; a fact stands for the
    episodes that state it."""
    from tasks.rerank import MAX_CANDIDATES, apply_ranking, rank

    candidates = [c.as_dict() for c in found[:MAX_CANDIDATES]]
    result = await rank(question, candidates, route["kind"], chat=services.chat, usage=usage)
    first = [m["uid"] for m in apply_ranking(candidates, result.ranking, len(candidates))]
    by_uid = {c.uid: c for c in found}
    kept = set(first)
    order = first + [c.uid for c in found if c.uid not in kept]
    return [s for uid in order for s in by_uid[uid].sources]


def session_summariser(services: Services, usage: Any) -> Summariser:
    """The agent's session summariser: the LLM task with a model (`--llm`), else extractive."""
    from tasks.sessions import llm_summariser

    return llm_summariser(services, usage)


def by_rank(uids: Sequence[str], found: Sequence[Any]) -> Ranked:
    """Episodes in the order of `uids`, scored by rank (1, 1/2, ...) with the sides scaled alike
    (those of the best candidate that stands for the episode: itself, or a fact it states)."""
    sides: dict[str, tuple[float, dict[str, float]]] = {}
    for c in found:
        for uid in c.sources:
            sides.setdefault(uid, (c.score, c.sides))
    out = []
    for rank, uid in enumerate(uids, start=1):
        score, side = sides.get(uid, (1.0, {}))
        factor = (1.0 / rank) / score if score > 0 else 0.0
        out.append((uid, 1.0 / rank, {k: v * factor for k, v in side.items()}))
    return out


def add_slept(slept: dict[str, Any], report: dict[str, Any]) -> None:
    """Add what one conversation's sleep did to the eval's totals: its counts, the seconds of
    each stage that ran and, for deep sleep, how often triage sent reflection on to the deep
    reflection and how many beliefs it revised."""
    for key in ("rescored", "expired", "archived", "forgotten", "protected"):
        slept[key] = slept.get(key, 0) + int(report[key])
    stages: dict[str, float] = slept.setdefault("stage_seconds", {})
    for stage, seconds in report["stages"].items():
        stages[stage] = round(stages.get(stage, 0.0) + float(seconds), 3)
    reflection = report.get("reflection")
    if reflection:
        slept["reflections"] = slept.get("reflections", 0) + int(reflection["reflected"])
        revised = slept.get("reflection_revisions", 0) + int(reflection["revisions"])
        slept["reflection_revisions"] = revised


def llm_summary(chat: ChatModels) -> dict[str, Any]:
    """LLM requests of the whole eval (routing, extraction, beliefs, rerank) from the counters
    of its chat models."""
    by_task = chat.totals.snapshot()
    return {
        "llm_calls": sum(t["calls"] for t in by_task.values()),
        "input_tokens": sum(t["input_tokens"] for t in by_task.values()),
        "output_tokens": sum(t["output_tokens"] for t in by_task.values()),
        "fallbacks": sum(t["fallbacks"] for t in by_task.values()),
        "by_task": by_task,
    }


@dataclass(slots=True)
class EvalResult:
    """Per-question rankings and the summary written to `--json`."""

    questions: list[dict[str, Any]]
    summary: dict[str, Any]
    latencies_ms: list[float] = field(default_factory=list)
    """Retrieval time of each question, in question order (not written to `--json`)."""

    def as_json(self) -> dict[str, Any]:
        """The `--json` document."""
        return {"questions": self.questions, "summary": self.summary}


Progress = Callable[[str, int, int], None]


async def run_eval(
    data: Path,
    *,
    recipe_name: str = "auto",
    part: str | None = None,
    llm: bool = False,
    limit_conversations: int | None = None,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    chat: ChatModels | None = None,
    progress: Progress | None = None,
    bookkeep: Bookkeep | None = None,
    store: Path | None = None,
    references: bool = False,
    consolidate_level: str | None = None,
) -> EvalResult:
    """Run the memeval protocol on `data`; return rankings and the summary.

    `consolidate_level` (micro, daily, deep) runs that level of sleep on each conversation's
    memory at its last session's time, after the ingest and before the questions: the
    consolidation graph, as `mneme consolidate` runs it (deep sleep reflects; with `llm`, the
    stages ask the model as they do in the agent).

    `chat` injects chat models (tests); by default they come from the settings with `llm`, and
    none are used without it. `store`: keep each conversation's finished ingest there and reuse
    it on later runs while the data, the embedder, the extraction mode and the write-path code
    are unchanged (see `ingest_key`); questions always run on a fresh copy, so access
    strengthening never leaks from one run into the next. `references`: also score the reference
    retrievers (`bench.references`) on the same questions, as `summary["references"]`.
    """
    conversations = read_memeval(data)[:limit_conversations]
    base = settings or load_settings()
    if not llm:
        chat = ChatModels.offline_for(base)
    elif chat is None:
        chat = ChatModels(base)
    if llm and chat.offline:
        # Fail fast rather than measure the heuristics under the --llm label.
        raise ConfigError(
            "--llm needs a chat endpoint: set MNEME_LLM_BASE_URL (and MNEME_LLM_API_KEY for "
            "a hosted one), or leave out --llm to evaluate offline"
        )
    return await _run_eval(
        conversations,
        base,
        chat,
        recipe_name=recipe_name,
        part=part,
        llm=llm,
        embedder=embedder,
        progress=progress,
        bookkeep=bookkeep,
        store=store,
        references=references,
        consolidate_level=consolidate_level,
    )


async def _run_eval(
    conversations: list[Conversation],
    base: Settings,
    chat: ChatModels,
    *,
    recipe_name: str,
    part: str | None,
    llm: bool,
    embedder: Embedder | None,
    progress: Progress | None,
    bookkeep: Bookkeep | None,
    store: Path | None,
    references: bool,
    consolidate_level: str | None = None,
) -> EvalResult:
    level = parse_level(consolidate_level) if consolidate_level else None
    slept: dict[str, Any] = {}
    if recipe_name.lower() != "auto":
        get_recipe(recipe_name)  # fail before ingesting anything
    if part:
        ablate(get_recipe("SIMPLE"), part)
    bookkeep_name = (
        "default" if bookkeep is None else f"{bookkeep.__module__}.{bookkeep.__qualname__}"
    )
    usage = Usage()
    bookkeep = bookkeep or default_bookkeep
    own_embedder = embedder is None
    embedder = embedder or build_embedder(base)
    # On a server (QDRANT_URL) every conversation is a tenant of its own, as users are; its
    # vectors live there, so stored ingests (a directory each) are neither read nor written.
    on_server = bool(base.qdrant_url)
    scored: list[Scored] = []
    ordered: list[Ordered] = []
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    ingest_s = 0.0
    turns = episodes = duplicates = reused = unindexed = 0
    failed_conversations: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="mneme-eval-") as tmp:
            for n, conv in enumerate(conversations, start=1):
                work = Path(tmp) / f"c{n}"
                settings_n = eval_settings(base, work)
                tenant = f"memeval-{n}"
                stored = (
                    stored_dir(
                        store, conv, ingest_key(conv, n, embedder.fingerprint, llm, bookkeep_name)
                    )
                    if store is not None and not on_server
                    else None
                )
                loaded = load_ingest(stored, work) if stored is not None else None
                services = await Services.open(
                    settings_n, embedder=embedder, chat=chat, pipeline=bookkeep
                )
                try:
                    if loaded is not None:
                        ingested = loaded
                        reused += 1
                    else:
                        if progress:
                            progress(f"ingest {n}/{len(conversations)}", 0, 1)
                        if on_server:  # an earlier run's points of this tenant
                            await clear_tenant_vectors(services, tenant)
                        try:
                            ingested = await ingest(services, tenant, conv, bookkeep)
                        except Exception as exc:  # reported in the summary; the rest go on
                            failed_conversations.append(
                                {"conversation": n, "error": f"{type(exc).__name__}: {exc}"[:300]}
                            )
                            continue
                        if stored is not None:  # stores flushed and unlocked before the copy
                            await services.close()
                            save_ingest(work, stored, ingested)
                            services = await Services.open(
                                settings_n, embedder=embedder, chat=chat, pipeline=bookkeep
                            )
                    ingest_s += ingested.seconds
                    turns += len(ingested.order)
                    episodes += ingested.episodes
                    duplicates += ingested.duplicates
                    unindexed += len(ingested.failed)
                    if level is not None:  # sleep at the last session's time, as any caller
                        done = await run_consolidation(
                            services, tenant, level.value, ingested.last.isoformat()
                        )
                        add_slept(slept, done["report"])
                    last = ingested.last + SESSION_GAP
                    # By the questions' time the background pass (consolidation, any level) has
                    # summarised every session whose idle gap elapsed (`memory.write.sessions`).
                    await summarise_sessions(
                        services, tenant, last, summarise=session_summariser(services, usage)
                    )
                    for i, q in enumerate(conv.questions, start=1):
                        now = parse_date(q.get("date")) or last
                        question = str(q["question"])
                        route = await llm_route(services, question, usage) if llm else None
                        recipe, queries, weights, count = choose_recipe(
                            question, recipe_name, part, route
                        )
                        start = time.perf_counter()
                        found = await retrieve(
                            services, tenant, queries, recipe, now, signal_weights=weights
                        )
                        latencies.append((time.perf_counter() - start) * 1000.0)
                        # A fact stands for the episodes that state it (each at its score, its
                        # sides those of a turn found by the user's words: `Candidate.sides`).
                        uids = [s for c in found for s in c.sources]
                        ranked_in: Ranked = [
                            (s, c.score, c.sides) for c in found for s in c.sources
                        ]
                        if llm and route is not None:  # the rerank node's order (not timed)
                            uids = await llm_rerank(services, question, found, route, usage)
                            ranked_in = by_rank(uids, found)
                        if found:  # retrieval strengthens memory, as in the agent's rerank node
                            await services.graph.episodes.record_access(tenant, uids[:count], now)
                        ranked = ranked_turns(ranked_in, ingested)
                        rows.append({"id": q["id"], "ranked": ranked})
                        row, order = scored_question(q, ranked)
                        scored.append(row)
                        ordered += [order] if order is not None else []
                        if progress:
                            progress(f"questions {n}/{len(conversations)}", i, len(conv.questions))
                finally:
                    await services.close()
                    shutil.rmtree(work, ignore_errors=True)  # the next conversation's disk
        reference_rows = (
            await reference_metrics(
                conversations, embedder, store / "references" if store is not None else None
            )
            if references
            else None
        )
    finally:
        if own_embedder:
            await embedder.close()
    summary: dict[str, Any] = {
        "metrics": summarise(scored),
        "stale": summarise_order(ordered) if ordered else None,
        "latency_ms": {
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "mean": sum(latencies) / len(latencies) if latencies else 0.0,
            "n": len(latencies),
        },
        "ingest": {
            "seconds": ingest_s,
            "turns": turns,
            "episodes": episodes,
            "duplicates": duplicates,
            "ms_per_turn": 1000.0 * ingest_s / turns if turns else 0.0,
            "reused": reused,
            "failed_episodes": unindexed,
            "failed_conversations": failed_conversations,
        },
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "conversations": len(conversations),
        "recipe": recipe_name,
        "ablate": part,
        "consolidation": {"level": level.value, **slept} if level is not None else None,
        "llm": llm,
        "llm_usage": llm_summary(chat) if llm else None,
        "embedder": embedder.fingerprint,
        "vectors": f"qdrant server {base.qdrant_url}" if on_server else "qdrant-edge (embedded)",
        "ks": list(KS),
        "references": reference_rows,
    }
    return EvalResult(questions=rows, summary=summary, latencies_ms=latencies)
