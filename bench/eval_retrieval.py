"""`mneme eval retrieval`: the memeval protocol (docs/memeval.md) through mneme's own paths.

For each conversation: a fresh embedded memory (SQLite graph + local Qdrant in a temporary
directory) and tenant; every session ingested in order through the agent's write path (the
turn's evidence score as the router computes it, `remember`, then the bookkeeping graph of
`graph.bookkeeping`, the pipeline the agent's queue runs: chunks, contextual derivatives,
prospective paraphrases, vectors, beliefs, topics and entities); every question asked through
the read path (the router's decision planned into a recipe by `nodes.retrieve.plan`, then
`retrieve`, as the agent's retrieve node does), with the question's date as now. Offline (the
default) the router and extraction are the agent's heuristics; with `--llm` the configured model
routes, extracts and reranks (the rerank node's `rank`), and the latency still counts only the
retrieval.

How a turn becomes an episode is `bench.memeval` (shared with `mneme ingest`). Turn ids are
opaque: they live only in this harness's map from episode uid to turn ids, never in the stores. A turn whose content the tenant already holds maps
to the existing episode (dedup); retrieving that episode ranks all its turns, in order.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench.memeval import (
    SESSION_GAP,
    Conversation,
    parse_date,
    placed,
    read_memeval,
)
from bench.metrics import KS, Scored, percentile, question_metrics, summarise
from memory.consolidation import consolidate, parse_level
from memory.embeddings import Embedder, build_embedder
from memory.episodes import remember
from memory.recipes import Recipe, ablate, get_recipe
from memory.retrieval import retrieve
from memory.schema import SCHEMA_VERSION, as_utc, episode_uid, utcnow
from memory.services import ChatModels, Services
from memory.services.usage import Usage
from memory.settings import ConfigError, Settings, load_settings

MIN_RANKED = 20
WRITE_PATH = (
    "bench.eval_retrieval",
    "bench.memeval",
    "graph.bookkeeping",
    "memory.chunking",
    "memory.contextual",
    "memory.embeddings",
    "memory.episodes",
    "memory.fact_rules",
    "memory.features",
    "memory.knowledge",
    "memory.relations",
    "memory.salience",
    "memory.schema",
    "memory.sparse",
    "memory.stores.graph.beliefs",
    "memory.stores.graph.consolidation",
    "memory.stores.graph.entities",
    "memory.stores.graph.episodes",
    "memory.stores.graph.facts",
    "memory.stores.graph.features",
    "memory.stores.graph.fields",
    "memory.stores.graph.inputs",
    "memory.stores.graph.snapshots",
    "memory.stores.graph.tenant_state",
    "memory.stores.graph.topics",
    "memory.stores.qdrant",
    "memory.stores.sqlite",
    "memory.stores.sqlite.beliefs",
    "memory.stores.sqlite.consolidation",
    "memory.stores.sqlite.connection",
    "memory.stores.sqlite.entities",
    "memory.stores.sqlite.episodes",
    "memory.stores.sqlite.facts",
    "memory.stores.sqlite.features",
    "memory.stores.sqlite.rows",
    "memory.stores.sqlite.snapshots",
    "memory.stores.sqlite.tenant_state",
    "memory.stores.sqlite.topics",
    "nodes.bookkeeping",
    "nodes.belief_assessment",
    "nodes.extract",
    "nodes.fact_builders",
    "nodes.fact_lexicon",
    "nodes.fact_patterns",
    "nodes.fact_text",
    "nodes.features",
    "nodes.knowledge",
    "nodes.provenance",
    "nodes.reflection",
    "nodes.route",
    "nodes.salience",
)
"""Modules whose source decides what an ingest writes: a stored ingest (`--store`) is reused only
while none of them has changed."""


@dataclass(slots=True)
class Ingested:
    """What the harness keeps of one conversation's ingest."""

    turn_ids: dict[str, list[str]] = field(default_factory=dict)
    """Episode uid → its turn ids, in order."""
    order: list[str] = field(default_factory=list)
    """Every turn id, in conversation order."""
    last: datetime = field(default_factory=utcnow)
    episodes: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    failed: dict[str, str] = field(default_factory=dict)
    """Episodes whose bookkeeping raised (uid -> error); the ingest carries on."""


def _ingested_json(ingested: Ingested) -> dict[str, Any]:
    return {
        "turn_ids": ingested.turn_ids,
        "order": ingested.order,
        "last": ingested.last.isoformat(),
        "episodes": ingested.episodes,
        "duplicates": ingested.duplicates,
        "seconds": ingested.seconds,
        "failed": ingested.failed,
    }


def _ingested_from(row: dict[str, Any]) -> Ingested:
    return Ingested(
        turn_ids={str(k): [str(t) for t in v] for k, v in row["turn_ids"].items()},
        order=[str(t) for t in row["order"]],
        last=as_utc(datetime.fromisoformat(row["last"])),
        episodes=int(row["episodes"]),
        duplicates=int(row["duplicates"]),
        seconds=float(row["seconds"]),
        failed={str(k): str(v) for k, v in (row.get("failed") or {}).items()},
    )


def ingest_key(conv: Conversation, n: int, fingerprint: str, llm: bool, bookkeep: str) -> str:
    """What a stored ingest of `conv` depends on: its sessions, its place in the file (the tenant
    name), the embedder, the extraction mode and the source of every module on the write path."""
    digest = hashlib.sha256()
    digest.update(json.dumps([conv.id, conv.sessions], sort_keys=True).encode("utf-8"))
    digest.update(f"|{n}|{fingerprint}|{llm}|{bookkeep}|{SCHEMA_VERSION}|".encode())
    digest.update(_write_path_digest())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def _write_path_digest() -> bytes:
    """Hash of the source of every module on the write path (read once per process)."""
    digest = hashlib.sha256()
    for name in WRITE_PATH:
        source = getattr(importlib.import_module(name), "__file__", None)
        if source:
            digest.update(Path(source).read_bytes())
    return digest.digest()


def _stored_dir(store: Path, conv: Conversation, key: str) -> Path:
    safe = re.sub(r"[^\w.-]+", "_", conv.id)[:60] or "conversation"
    return store / f"{safe}-{key}"


def _save_ingest(work: Path, target: Path, ingested: Ingested) -> None:
    """Copy a finished ingest to `target` atomically: a partial copy never has the final name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".partial-{target.name}-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(work, partial / "memory")
    (partial / "ingested.json").write_text(json.dumps(_ingested_json(ingested)), "utf-8")
    try:
        os.replace(partial, target)
    except OSError:  # another run stored the same ingest first: theirs is as good
        shutil.rmtree(partial, ignore_errors=True)


def _load_ingest(stored: Path, work: Path) -> Ingested | None:
    """A copy of the stored ingest in `work`, or None when there is none (or it is unreadable)."""
    marker = stored / "ingested.json"
    if not marker.is_file():
        return None
    try:
        ingested = _ingested_from(json.loads(marker.read_text("utf-8")))
        shutil.copytree(stored / "memory", work)
    except (OSError, ValueError, KeyError, TypeError):
        # Damaged: drop it so that this run's ingest takes its place.
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(stored, ignore_errors=True)
        return None
    return ingested


Bookkeep = Callable[[Services, str, str], Any]


async def ingest(
    services: Services, tenant: str, conv: Conversation, bookkeep: Bookkeep
) -> Ingested:
    """Remember and bookkeep every turn of the conversation, in order, scoring each turn's
    evidence as the agent's router does (the heuristic offline, the model with `--llm`)."""
    from nodes.route import assess_turn

    result = Ingested()
    start = time.perf_counter()
    clock: datetime | None = None
    for ep in placed(conv):
        result.order.extend(ep.turn_ids)
        if not ep.user_text.strip() and not ep.agent_text.strip():
            continue
        clock = ep.at
        assessment = await assess_turn(ep.user_text, [], chat=services.chat, usage=Usage())
        thread = f"session-{ep.session + 1}"
        done = await remember(
            services,
            tenant=tenant,
            thread_id=thread,
            user_text=ep.user_text,
            agent_text=ep.agent_text,
            at=ep.at,
            ess=assessment.evidence.record() if ep.user_text.strip() else None,
            uid=episode_uid(tenant, thread, f"turn:{ep.position}"),
        )
        result.turn_ids.setdefault(done.uid, []).extend(ep.turn_ids)
        if done.duplicate:
            result.duplicates += 1
            continue
        result.episodes += 1
        try:
            await bookkeep(services, tenant, done.uid)
        except Exception as exc:  # reported with the conversation, never fatal
            result.failed[done.uid] = f"{type(exc).__name__}: {exc}"[:300]
    result.last = clock or utcnow()
    result.seconds = time.perf_counter() - start
    return result


def ranked_turns(uids: Sequence[str], ingested: Ingested, minimum: int = MIN_RANKED) -> list[str]:
    """Turn ids of the retrieved episodes, best first; padded (latest turns first) to `minimum`."""
    out: list[str] = []
    seen: set[str] = set()
    for uid in uids:
        for turn in ingested.turn_ids.get(uid, []):
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


def choose_recipe(
    question: str, recipe_name: str, part: str | None, route: dict[str, Any] | None = None
) -> tuple[Recipe, list[str], dict[str, float]]:
    """Recipe, queries and credibility weights for a question, planned as the agent plans them
    (`nodes.retrieve.plan`) from `route` (default: the offline router's decision); a fixed
    recipe name replaces the router's choice, `part` turns one part off."""
    from nodes.retrieve import plan
    from nodes.route import heuristic_route  # the agent's offline router

    if route is None:
        route = heuristic_route(question).model_dump()
    recipe, queries, weights = plan(route, question)
    if recipe_name.lower() != "auto":
        recipe, queries = get_recipe(recipe_name), [question]
    if part:
        recipe = ablate(recipe, part)
    return recipe, queries, weights


async def llm_route(services: Services, question: str, usage: Any) -> dict[str, Any]:
    """The agent's LLM router on one question (the heuristic when the endpoint fails)."""
    from nodes.route import assess_turn

    assessment = await assess_turn(question, [], chat=services.chat, usage=usage)
    return assessment.route.model_dump()


async def llm_rerank(
    services: Services, question: str, found: Sequence[Any], route: dict[str, Any], usage: Any
) -> list[str]:
    """Episode uids in the agent's rerank order: what the rerank node keeps first (the model's
    listwise order), then the rest of the candidates in score order; a fact stands for the
    episodes that state it."""
    from nodes.rerank import MAX_CANDIDATES, apply_ranking, rank

    candidates = [c.as_dict() for c in found[:MAX_CANDIDATES]]
    result = await rank(question, candidates, route, chat=services.chat, usage=usage)
    first = [m["uid"] for m in apply_ranking(candidates, result.ranking, len(candidates))]
    by_uid = {c.uid: c for c in found}
    kept = set(first)
    order = first + [c.uid for c in found if c.uid not in kept]
    return [s for uid in order for s in by_uid[uid].sources]


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


async def default_bookkeep(services: Services, tenant: str, uid: str) -> None:
    """The agent's bookkeeping of one episode: the bookkeeping graph (`graph.bookkeeping`)."""
    from graph.bookkeeping import run_episode

    await run_episode(services, tenant, uid)


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


def eval_settings(base: Settings, data_dir: Path) -> Settings:
    """Settings for one conversation: the embedded stores in `data_dir`, models as configured."""
    return base.model_copy(
        update={
            "data_dir": data_dir,
            "graph_backend": "sqlite",
            "sqlite_path": None,
            "neo4j_uri": None,
            "qdrant_path": None,
            "qdrant_url": None,
        }
    )


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
    consolidate_level: str | None = None,
) -> EvalResult:
    """Run the memeval protocol on `data`; return rankings and the summary.

    `consolidate_level` (micro, daily, deep) runs that level of sleep on each conversation's
    memory at its last session's time, after the ingest and before the questions.

    `chat` injects chat models (tests); by default they come from the settings with `llm`, and
    none are used without it. `store`: keep each conversation's finished ingest there and reuse
    it on later runs while the data, the embedder, the extraction mode and the write-path code
    are unchanged (see `ingest_key`); questions always run on a fresh copy, so access
    strengthening never leaks from one run into the next.
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
    consolidate_level: str | None = None,
) -> EvalResult:
    level = parse_level(consolidate_level) if consolidate_level else None
    slept: dict[str, int] = {}
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
    scored: list[Scored] = []
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
                    _stored_dir(
                        store, conv, ingest_key(conv, n, embedder.fingerprint, llm, bookkeep_name)
                    )
                    if store is not None
                    else None
                )
                loaded = _load_ingest(stored, work) if stored is not None else None
                services = await Services.open(settings_n, embedder=embedder, chat=chat)
                try:
                    if loaded is not None:
                        ingested = loaded
                        reused += 1
                    else:
                        if progress:
                            progress(f"ingest {n}/{len(conversations)}", 0, 1)
                        try:
                            ingested = await ingest(services, tenant, conv, bookkeep)
                        except Exception as exc:  # reported in the summary; the rest go on
                            failed_conversations.append(
                                {"conversation": n, "error": f"{type(exc).__name__}: {exc}"[:300]}
                            )
                            continue
                        if stored is not None:  # stores flushed and unlocked before the copy
                            await services.close()
                            _save_ingest(work, stored, ingested)
                            services = await Services.open(settings_n, embedder=embedder, chat=chat)
                    ingest_s += ingested.seconds
                    turns += len(ingested.order)
                    episodes += ingested.episodes
                    duplicates += ingested.duplicates
                    unindexed += len(ingested.failed)
                    if level is not None:  # sleep at the last session's time
                        report = await consolidate(services, tenant, level, ingested.last)
                        for key in ("rescored", "expired", "archived", "forgotten", "protected"):
                            slept[key] = slept.get(key, 0) + int(getattr(report, key))
                    last = ingested.last + SESSION_GAP
                    for i, q in enumerate(conv.questions, start=1):
                        now = parse_date(q.get("date")) or last
                        question = str(q["question"])
                        route = await llm_route(services, question, usage) if llm else None
                        recipe, queries, weights = choose_recipe(question, recipe_name, part, route)
                        start = time.perf_counter()
                        found = await retrieve(
                            services, tenant, queries, recipe, now, signal_weights=weights
                        )
                        latencies.append((time.perf_counter() - start) * 1000.0)
                        # A fact stands for the episodes that state it.
                        uids = [s for c in found for s in c.sources]
                        if llm and route is not None:  # the rerank node's order (not timed)
                            uids = await llm_rerank(services, question, found, route, usage)
                        if found:  # retrieval strengthens memory, as in the agent's rerank node
                            await services.graph.record_access(
                                tenant, uids[: recipe.n_results], now
                            )
                        ranked = ranked_turns(uids, ingested)
                        rows.append({"id": q["id"], "ranked": ranked})
                        category = str(q.get("category") or "uncategorised")
                        scored.append(Scored(category, question_metrics(ranked, q["evidence"])))
                        if progress:
                            progress(f"questions {n}/{len(conversations)}", i, len(conv.questions))
                finally:
                    await services.close()
    finally:
        if own_embedder:
            await embedder.close()
    summary: dict[str, Any] = {
        "metrics": summarise(scored),
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
        "ks": list(KS),
    }
    return EvalResult(questions=rows, summary=summary, latencies_ms=latencies)
