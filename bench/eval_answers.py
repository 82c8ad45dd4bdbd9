"""`mneme eval answers`: the agent's own replies to a memeval file's questions, offline, scored
by the questions' `match` strings (bench/data/README.md, "agent, offline").

For each conversation: its memory, as `mneme eval retrieval` builds it (`bench.eval_ingest`:
the conversation ingested through the agent's write path as tenant `memeval-<n>`, reused from
`--store` while the data and the write path are unchanged, the session summaries of
`memory.write.sessions` written as the background pass would). Each question is then put to the
agent graph (`graph.agent.builder`: record, route, retrieve, rerank, respond, remember) with no
chat model, as that tenant, in a thread of its own, on a fresh copy of that memory's graph that
is thrown away after the question: the turn the agent records (left `pending`: no bookkeeping
pipeline runs, so it is never indexed) and the access it marks never reach the next question
or the stored ingest. The vector index (65 MB for a story, 2 s to copy on a loaded machine) is
shared by a conversation's questions instead: an offline turn writes no vector, and the harness
checks that every collection holds as many points after the questions as before
(`VectorsChanged` otherwise).
The agent's clock (`memory.clock`) is the question's `date`, else the conversation's last turn
plus `SESSION_GAP`, as in `mneme eval retrieval`.

Scoring (pure functions below): a reply answers when it holds one of the question's `match`
strings (case-insensitive) and, for a `current` question, does not give its `stale_value`
(`stale_given`); every category is scored the same way on its `match` strings.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.eval_ingest import (
    Ingested,
    default_bookkeep,
    eval_settings,
    ingest,
    ingest_key,
    load_ingest,
    save_ingest,
    stored_dir,
)
from bench.eval_retrieval import ranked_turns, session_summariser
from bench.memeval import SESSION_GAP, Conversation, parse_date, read_memeval
from memory import clock
from memory.embeddings.embedders import Embedder, build_embedder
from memory.retrieval.recipes import RECIPES, changed
from memory.services import ChatModels, Services, use_services
from memory.services.usage import Usage
from memory.settings import Settings, load_settings
from memory.text.sparse import token_set
from memory.write.sessions import summarise_sessions

CURRENT = "current"
TOP = 10
"""A question's answer counts as retrieved when one of its evidence turns is among the agent's
first ten ranked turns (the figure `mneme eval retrieval` scores)."""

CAUSES = ("not retrieved", "stale quoted", "other memory", "format", "no answer")
"""Why a reply missed, in the order they are tested (`miss_cause`)."""

Progress = Callable[[str, int, int], None]


def holds(reply: str, strings: Sequence[str]) -> bool:
    """True when `reply` holds one of `strings`, case-insensitively (the README's rule)."""
    low = reply.casefold()
    return any(str(s).casefold() in low for s in strings if str(s).strip())


def stale_given(reply: str, question: Mapping[str, Any]) -> bool:
    """True when the reply states the question's `stale_value` (one of its ` / ` alternatives).

    The words an alternative shares with the question, its answer and its match strings say
    nothing about which value the reply gives, so they are left out; the alternative is given
    when the reply holds at least half of its other content words (stemmed, stopwords out:
    `token_set`), or, when it has none ("Am I still doing keto?" / "keto"), all of its words.
    A reply that states the old value as past ("you quit keto") counts as giving it: read
    those (a reply that also holds a `match` string is listed as `both`)."""
    stale = str(question.get("stale_value") or "")
    if not stale.strip():
        return False
    said = token_set(reply)
    context = token_set(
        " ".join(
            [
                str(question.get("question", "")),
                str(question.get("answer", "")),
                *map(str, question.get("match") or []),
            ]
        )
    )
    for alternative in stale.split(" / "):
        words = token_set(alternative)
        own = words - context
        if own and len(own & said) >= math.ceil(len(own) / 2):
            return True
        if not own and words and words <= said:
            return True
    return False


SHORT = 3
"""A match string this short ("yes", "no", "not", "PT") is found inside other words too
("Yesterday", "now"): a reply that holds no longer one is flagged `short`, to be read."""


def judged(question: Mapping[str, Any], reply: str) -> dict[str, bool]:
    """`match` (a match string is in the reply), `stale` (the stale value is: `current` only),
    `answered` (match, and for `current` not stale) and `short` (every match string it holds is
    at most `SHORT` characters long)."""
    strings = [str(s) for s in question.get("match") or []]
    match = holds(reply, strings)
    stale = question.get("category") == CURRENT and stale_given(reply, question)
    short = match and not holds(reply, [s for s in strings if len(s.strip()) > SHORT])
    return {"match": match, "stale": stale, "answered": match and not stale, "short": short}


@dataclass(slots=True)
class Quoted:
    """Which memory a reply drew from and where the evidence ranked."""

    evidence_rank: int | None
    """1-based place of the best evidence turn among the ranked turns (None: not ranked)."""
    turns: list[str] = field(default_factory=list)
    """The turn ids of the memory the reply quotes (empty: none found)."""


def quoted_memory(
    state: Mapping[str, Any], reply: str, question: Mapping[str, Any], ingested: Ingested
) -> Quoted:
    """Where the evidence ranked among the agent's candidates, and the memory whose offline
    answer (`tasks.offline_answer.answer`, at the agent's clock) the reply holds."""
    from tasks.offline_answer import answer

    found = list(state.get("candidates") or [])
    ranked = ranked_turns(
        [
            (s, float(c.get("score") or 0.0), c.get("sides") or {})
            for c in found
            for s in c["sources"]
        ],
        ingested,
        minimum=0,
    )
    evidence = set(question.get("evidence") or [])
    rank = next((i for i, t in enumerate(ranked, start=1) if t in evidence), None)
    used = sorted(state.get("memories") or [], key=lambda m: int(m.get("rank") or 10**6))
    for memory in used:
        if answer(memory, str(question["question"]), clock.now()).rstrip(".") in reply:
            sources = memory.get("sources") or [memory.get("episode_uid")]
            turns = [t for uid in sources for t in ingested.turn_ids.get(str(uid), [])]
            return Quoted(rank, turns)
    return Quoted(rank)


def miss_cause(
    question: Mapping[str, Any], verdict: Mapping[str, bool], quoted: Quoted, reply: str
) -> str:
    """Why a reply missed (one of `CAUSES`): the evidence is not among the first `TOP` ranked
    turns; else the reply gives the stale value; quotes a memory that holds no evidence turn;
    quotes an evidence memory without the value's words (its format lost it); or says it does
    not remember."""
    from tasks.offline_answer import NOTHING

    if quoted.evidence_rank is None or quoted.evidence_rank > TOP:
        return "not retrieved"
    if verdict["stale"]:
        return "stale quoted"
    if reply.startswith(NOTHING):
        return "no answer"
    if set(quoted.turns) & set(question.get("evidence") or []):
        return "format"
    return "other memory"


@contextmanager
def agent_recipes(changes: Mapping[str, object] | None) -> Iterator[None]:
    """The agent's recipes (`RECIPES`, which `get_recipe` and so the retrieve node read) with
    `changes` applied (`step.field`: value) for the block; restored after."""
    if not changes:
        yield
        return
    saved = dict(RECIPES)
    RECIPES.update({name: changed(recipe, dict(changes)) for name, recipe in saved.items()})
    try:
        yield
    finally:
        RECIPES.clear()
        RECIPES.update(saved)


@contextmanager
def quiet_queue() -> Iterator[None]:
    """Silence the queue's warning that an episode stays pending: the agent's question turns
    are left unbookkept on purpose (their memory copy is thrown away)."""
    logger = logging.getLogger("mneme.queue")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def compiled_agent() -> Any:
    """The agent graph with an in-memory checkpointer (each question a thread of its own)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder

    return builder.compile(checkpointer=InMemorySaver(), name="agent")


async def ask(
    settings: Settings,
    embedder: Embedder,
    chat: ChatModels,
    tenant: str,
    question: Mapping[str, Any],
    now: datetime,
    changes: Mapping[str, object] | None,
) -> dict[str, Any]:
    """Put one question to the agent graph on the memory in `settings.data_dir`, as `tenant`,
    at `now`; the final state."""
    services = await Services.open(settings, embedder=embedder, chat=chat)
    try:
        return await ask_on(services, tenant, question, now, changes)
    finally:
        await services.close()


async def ask_on(
    services: Services,
    tenant: str,
    question: Mapping[str, Any],
    now: datetime,
    changes: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """Put one question to the agent graph on `services` (their chat models: offline ones for
    this eval), as `tenant`, at `now`, in a thread of its own; the final state."""
    with use_services(services), clock.at(now), agent_recipes(changes), quiet_queue():
        state: dict[str, Any] = await compiled_agent().ainvoke(
            {"messages": [{"role": "user", "content": str(question["question"])}]},
            {"configurable": {"thread_id": f"question-{question['id']}"}},
            context={"user_id": tenant},
        )
    return state


class VectorsChanged(RuntimeError):
    """The agent's questions wrote to the shared vector index (they must not: see the module)."""


GRAPH_FILES = ("graph.sqlite3", "graph.sqlite3-wal", "graph.sqlite3-shm")


def question_copy(work: Path, copy: Path) -> Path:
    """A memory for one question in `copy`: a fresh copy of the graph of `work` and its vector
    index linked, not copied (offline turns write no vectors: see the module)."""
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir(parents=True)
    for name in GRAPH_FILES:
        if (work / name).exists():
            shutil.copy2(work / name, copy / name)
    (copy / "vectors").symlink_to((work / "vectors").resolve(), target_is_directory=True)
    return copy


async def vector_counts(
    base: Settings, work: Path, embedder: Embedder, chat: ChatModels, tenant: str
) -> dict[str, int]:
    """How many points the tenant has in each vector collection of the memory in `work`."""
    from memory.schema import VECTOR_KINDS

    services = await Services.open(eval_settings(base, work), embedder=embedder, chat=chat)
    try:
        return {kind: await services.vectors.count(kind, tenant) for kind in VECTOR_KINDS}
    finally:
        await services.close()


@dataclass(slots=True)
class AnswersResult:
    """Per-question replies and verdicts of one file under each variant, and their summaries."""

    rows: dict[str, list[dict[str, Any]]]
    """Variant name -> one row per question."""
    summary: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The `--json` document of one file."""
        return {"questions": self.rows, "summary": self.summary}


def summarise_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per category (and `all`): n, answered, match, stale (given), both (match and stale),
    short (answered by a short match string only), the answered share, and the causes of the
    misses."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not row["scored"]:
            continue
        for name in (row["category"], "all"):
            cell = out.setdefault(
                name,
                {
                    "n": 0,
                    "answered": 0,
                    "match": 0,
                    "stale": 0,
                    "both": 0,
                    "short": 0,
                    "causes": {},
                },
            )
            cell["n"] += 1
            cell["answered"] += row["answered"]
            cell["match"] += row["match"]
            cell["stale"] += row["stale"]
            cell["both"] += row["match"] and row["stale"]
            cell["short"] += row["answered"] and row["short"]
            if not row["answered"]:
                causes: dict[str, int] = cell["causes"]
                causes[row["cause"]] = causes.get(row["cause"], 0) + 1
    for cell in out.values():
        cell["share"] = cell["answered"] / cell["n"] if cell["n"] else 0.0
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == "all", kv[0] != CURRENT, kv[0])))


async def conversation_memory(
    conv: Conversation,
    n: int,
    work: Path,
    base: Settings,
    embedder: Embedder,
    chat: ChatModels,
    store: Path | None,
) -> tuple[Ingested, bool]:
    """The conversation's memory in `work` (tenant `memeval-<n>`), from `store` when it holds
    this ingest, else ingested now (and kept there); sessions summarised as of the questions'
    time. Whether it was reused."""
    settings = eval_settings(base, work)
    key = ingest_key(conv, n, embedder.fingerprint, False, "default")
    stored = stored_dir(store, conv, key) if store is not None else None
    loaded = load_ingest(stored, work) if stored is not None else None
    reused = loaded is not None
    tenant = f"memeval-{n}"
    services = await Services.open(
        settings, embedder=embedder, chat=chat, pipeline=default_bookkeep
    )
    try:
        if loaded is None:
            loaded = await ingest(services, tenant, conv, default_bookkeep)
            if stored is not None:  # stores flushed and unlocked before the copy
                await services.close()
                save_ingest(work, stored, loaded)
                services = await Services.open(settings, embedder=embedder, chat=chat)
        await summarise_sessions(
            services,
            tenant,
            loaded.last + SESSION_GAP,
            summarise=session_summariser(services, Usage()),
        )
    finally:
        await services.close()
    return loaded, reused


async def run_answers(
    data: Path,
    *,
    variants: Mapping[str, Mapping[str, object] | None] | None = None,
    limit_conversations: int | None = None,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    store: Path | None = None,
    progress: Progress | None = None,
) -> AnswersResult:
    """Ask every question of `data` of the agent offline under each variant (name -> recipe
    changes; default: the agent as it is) and score the replies.

    The memory is embedded (SQLite + Qdrant Edge in a temporary directory, a fresh copy per
    question) even when `QDRANT_URL` is set: a per-question copy of a server's points is not
    possible. `store` as for `mneme eval retrieval` (the same stored ingests)."""
    variants = dict(variants or {"agent": None})
    conversations = read_memeval(data)[:limit_conversations]
    base = (settings or load_settings()).model_copy(update={"qdrant_url": None})
    chat = ChatModels.offline_for(base)
    own_embedder = embedder is None
    embedder = embedder or build_embedder(base)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    reused = 0
    try:
        with tempfile.TemporaryDirectory(prefix="mneme-answers-") as tmp:
            for n, conv in enumerate(conversations, start=1):
                work = Path(tmp) / f"c{n}"
                if progress:
                    progress(f"memory {n}/{len(conversations)}", 0, 1)
                ingested, was_stored = await conversation_memory(
                    conv, n, work, base, embedder, chat, store
                )
                reused += was_stored
                last = ingested.last + SESSION_GAP
                before = await vector_counts(base, work, embedder, chat, f"memeval-{n}")
                for i, q in enumerate(conv.questions, start=1):
                    now = parse_date(q.get("date")) or last
                    for name, changes in variants.items():
                        copy = question_copy(work, Path(tmp) / "question")
                        try:
                            state = await ask(
                                eval_settings(base, copy),
                                embedder,
                                chat,
                                f"memeval-{n}",
                                q,
                                now,
                                changes,
                            )
                        finally:
                            shutil.rmtree(copy, ignore_errors=True)
                        rows[name].append(scored_row(conv, q, state, ingested, now))
                    if progress:
                        progress(f"questions {n}/{len(conversations)}", i, len(conv.questions))
                after = await vector_counts(base, work, embedder, chat, f"memeval-{n}")
                if after != before:
                    raise VectorsChanged(
                        f"{conv.id}: the questions changed the vector index ({before} -> {after})"
                    )
                shutil.rmtree(work, ignore_errors=True)
    finally:
        if own_embedder:
            await embedder.close()
    summary = {
        "variants": {
            name: {"changes": dict(changes or {}), "categories": summarise_rows(rows[name])}
            for name, changes in variants.items()
        },
        "conversations": len(conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "reused_ingests": reused,
        "embedder": embedder.fingerprint,
    }
    return AnswersResult(rows=rows, summary=summary)


def scored_row(
    conv: Conversation,
    q: Mapping[str, Any],
    state: Mapping[str, Any],
    ingested: Ingested,
    now: datetime,
) -> dict[str, Any]:
    """One question's row: the reply, the verdict, where the evidence ranked, which memory the
    reply quoted and, for a miss, why."""
    messages = state.get("messages") or []
    reply = str(messages[-1].content) if messages else ""
    verdict = judged(q, reply)
    with clock.at(now):
        quoted = quoted_memory(state, reply, q, ingested)
    scored = bool(q.get("match"))
    return {
        "conversation": conv.id,
        "id": q["id"],
        "category": str(q.get("category") or "uncategorised"),
        "question": q["question"],
        "reply": reply,
        "scored": scored,
        **verdict,
        "evidence_rank": quoted.evidence_rank,
        "quoted_turns": quoted.turns,
        "cause": miss_cause(q, verdict, quoted, reply)
        if scored and not verdict["answered"]
        else None,
    }
