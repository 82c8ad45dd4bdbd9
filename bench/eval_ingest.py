"""The write side of `mneme eval retrieval`: ingest a memeval conversation through the agent's
write path, and keep finished ingests between runs (`--store`).

Each conversation gets its own embedded memory (SQLite graph + Qdrant Edge in a directory, or the
Qdrant server of `QDRANT_URL` for its vectors) and tenant; every session is ingested in order (`bench.memeval.placed`): the turn's evidence score as
the router computes it, `remember`, then the bookkeeping graph of `graph.bookkeeping` (chunks,
contextual derivatives, prospective paraphrases, vectors, beliefs, topics and entities). Turn ids
live only in the harness's map from episode uid to turn ids, never in the stores.

A stored ingest is reused only while its key (`ingest_key`) is unchanged: the conversation, its
position, the embedder, the extraction mode and the code of every module in `WRITE_PATH`
(comments and docstrings aside). This module is on that list, so the read side of the harness
lives elsewhere (`bench.eval_retrieval`): changing how questions are asked or scored never
re-ingests.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench.memeval import Conversation, placed
from memory.schema import SCHEMA_VERSION, as_utc, episode_uid, utcnow
from memory.services import Services
from memory.services.usage import Usage
from memory.settings import Settings
from memory.write.episodes import remember

WRITE_PATH = (
    "bench.eval_ingest",
    "bench.memeval",
    "graph.bookkeeping",
    "graph.errors",
    "memory.beliefs.apperception",
    "memory.beliefs.evidence",
    "memory.beliefs.views",
    "memory.text.chunking",
    "memory.write.compression",
    "memory.text.salient",
    "memory.write.contextual",
    "memory.embeddings.embedders",
    "memory.embeddings.remote",
    "memory.write.episodes",
    "memory.knowledge.emotions",
    "memory.knowledge.rules",
    "memory.beliefs.features",
    "memory.knowledge.goals",
    "memory.knowledge.goal_rules",
    "memory.knowledge.goal_reading",
    "memory.knowledge.facts",
    "memory.knowledge.causes",
    "memory.knowledge.precision",
    "memory.write.outbox",
    "memory.write.deadletter",
    "memory.write.filing",
    "memory.write.limits",
    "memory.write.quarantine",
    "memory.text.questions",
    "memory.text.relations",
    "memory.beliefs.revision",
    "memory.sleep.salience",
    "memory.schema",
    "memory.tenant",
    "memory.write.sessions",
    "memory.text.sparse",
    "memory.text.verbs",
    "memory.beliefs.sponge",
    "memory.stores.graph.beliefs",
    "memory.stores.graph.concepts",
    "memory.stores.graph.coretrieval",
    "memory.stores.graph.entities",
    "memory.stores.graph.episodes",
    "memory.stores.graph.facts",
    "memory.stores.graph.features",
    "memory.stores.graph.goals",
    "memory.stores.graph.fields",
    "memory.stores.graph.inputs",
    "memory.stores.graph.kind",
    "memory.stores.graph.leases",
    "memory.stores.graph.snapshots",
    "memory.stores.graph.summaries",
    "memory.stores.graph.tenant_state",
    "memory.stores.graph.topics",
    "memory.stores.qdrant",
    "memory.stores.qdrant_collections",
    "memory.stores.qdrant_edge",
    "memory.stores.qdrant_edge_query",
    "memory.stores.qdrant_edge_shards",
    "memory.stores.qdrant_idf",
    "memory.stores.qdrant_query",
    "memory.stores.qdrant_server",
    "memory.stores.qdrant_shards",
    "memory.stores.sqlite",
    "memory.stores.sqlite.beliefs",
    "memory.stores.sqlite.concepts",
    "memory.stores.sqlite.connection",
    "memory.stores.sqlite.coretrieval",
    "memory.stores.sqlite.edges",
    "memory.stores.sqlite.entities",
    "memory.stores.sqlite.episodes",
    "memory.stores.sqlite.facts",
    "memory.stores.sqlite.features",
    "memory.stores.sqlite.goals",
    "memory.stores.sqlite.kind",
    "memory.stores.sqlite.leases",
    "memory.stores.sqlite.rows",
    "memory.stores.sqlite.snapshots",
    "memory.stores.sqlite.summaries",
    "memory.stores.sqlite.tenant_state",
    "memory.stores.sqlite.topics",
    "memory.text.timeparse",
    "tasks.belief_assessment",
    "nodes.bookkeeping",
    "nodes.compress",
    "tasks.compress",
    "tasks.content",
    "tasks.directives",
    "tasks.entity_types",
    "tasks.ess",
    "tasks.ess_cues",
    "nodes.extract",
    "tasks.extract",
    "tasks.facts.propositions",
    "tasks.facts.builders",
    "tasks.facts.lexicon",
    "tasks.facts.patterns",
    "tasks.facts.requests",
    "tasks.facts.source",
    "tasks.facts.text",
    "nodes.fallback",
    "nodes.features",
    "tasks.keywords",
    "nodes.knowledge",
    "tasks.knowledge_prompt",
    "tasks.provenance",
    "nodes.record",
    "tasks.reflect",
    "tasks.reflection",
    "tasks.respond",
    "tasks.route",
    "nodes.salience",
    "nodes.sessions",
    "tasks.sessions",
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


def code_of(source: str) -> str:
    """A module's code without its comments, docstrings and layout (a dump of its syntax tree,
    bare string statements left out), so that an edit of the prose alone keeps stored ingests."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not _is_string_statement(s)]
            setattr(node, "body", kept or [ast.Pass()])  # noqa: B010 (any node with a body)
    return ast.dump(tree, include_attributes=False)


def _is_string_statement(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


@lru_cache(maxsize=1)
def _write_path_digest() -> bytes:
    """Hash of the code (`code_of`) of every module on the write path (read once per process)."""
    digest = hashlib.sha256()
    for name in WRITE_PATH:
        source = getattr(importlib.import_module(name), "__file__", None)
        if source:
            digest.update(code_of(Path(source).read_text("utf-8")).encode("utf-8"))
    return digest.digest()


def stored_dir(store: Path, conv: Conversation, key: str) -> Path:
    """Where the ingest of `conv` under `key` is kept in `store`."""
    safe = re.sub(r"[^\w.-]+", "_", conv.id)[:60] or "conversation"
    return store / f"{safe}-{key}"


BLOCK = 1 << 20


def copy_sparse(src: str, dst: str) -> str:
    """Copy one file leaving its all-zero blocks as holes: the vector index preallocates its
    files sparsely, and a plain copy writes the zeros out (a 15 MB ingest became 850 MB)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while block := fin.read(BLOCK):
            if block.count(0) == len(block):
                fout.seek(len(block), os.SEEK_CUR)
            else:
                fout.write(block)
        fout.truncate()
    shutil.copystat(src, dst)
    return dst


def save_ingest(work: Path, target: Path, ingested: Ingested) -> None:
    """Copy a finished ingest to `target` atomically: a partial copy never has the final name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".partial-{target.name}-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(work, partial / "memory", copy_function=copy_sparse)
    (partial / "ingested.json").write_text(json.dumps(_ingested_json(ingested)), "utf-8")
    try:
        os.replace(partial, target)
    except OSError:  # another run stored the same ingest first: theirs is as good
        shutil.rmtree(partial, ignore_errors=True)


def load_ingest(stored: Path, work: Path) -> Ingested | None:
    """A copy of the stored ingest in `work`, or None when there is none (or it is unreadable)."""
    marker = stored / "ingested.json"
    if not marker.is_file():
        return None
    try:
        ingested = _ingested_from(json.loads(marker.read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        # Damaged: drop it so that this run's ingest takes its place.
        shutil.rmtree(stored, ignore_errors=True)
        return None
    try:
        shutil.copytree(stored / "memory", work, copy_function=copy_sparse)
    except OSError:
        # The copy failed (a full disk, say), not the ingest: keep it for the next run.
        shutil.rmtree(work, ignore_errors=True)
        return None
    return ingested


def eval_settings(base: Settings, data_dir: Path) -> Settings:
    """Settings for one conversation: a SQLite graph in `data_dir`, models as configured, and
    the vectors in an embedded index there too, or on the Qdrant server of `QDRANT_URL` when
    it is set (every conversation a tenant of its own on that server, as users are)."""
    update: dict[str, object] = {
        "data_dir": data_dir,
        "graph_backend": "sqlite",
        "sqlite_path": None,
        "neo4j_uri": None,
        "qdrant_path": None,
    }
    if not base.qdrant_url:
        update["qdrant_url"] = None
    return base.model_copy(update=update)


async def clear_tenant_vectors(services: Services, tenant: str) -> int:
    """Delete every vector point of `tenant` (a server keeps an earlier run's); how many."""
    from memory.schema import VECTOR_KINDS

    deleted = 0
    for kind in VECTOR_KINDS:
        ids = [hit.id for hit in await services.vectors.scroll_points(kind, tenant)]
        await services.vectors.delete_points(kind, tenant, ids)
        deleted += len(ids)
    return deleted


Bookkeep = Callable[[Services, str, str], Any]


async def default_bookkeep(services: Services, tenant: str, uid: str) -> None:
    """The agent's bookkeeping of one episode: the bookkeeping graph (`graph.bookkeeping`)."""
    from graph.bookkeeping import run_episode

    await run_episode(services, tenant, uid)


async def ingest(
    services: Services, tenant: str, conv: Conversation, bookkeep: Bookkeep
) -> Ingested:
    """Remember and bookkeep every turn of the conversation, in order, scoring each turn's
    evidence as the agent's router does (the heuristic offline, the model with `--llm`)."""
    from tasks.route import assess_turn

    result = Ingested()
    start = time.perf_counter()
    clock: datetime | None = None
    for turn in placed(conv):
        result.order.extend(turn.turn_ids)
        if not turn.user_text.strip() and not turn.agent_text.strip():
            continue
        clock = turn.at
        assessment = await assess_turn(turn.user_text, [], chat=services.chat, usage=Usage())
        thread = f"session-{turn.session + 1}"
        done = await remember(
            services,
            tenant=tenant,
            thread_id=thread,
            user_text=turn.user_text,
            agent_text=turn.agent_text,
            at=turn.at,
            ess=assessment.evidence.record() if turn.user_text.strip() else None,
            uid=episode_uid(tenant, thread, f"turn:{turn.position}"),
        )
        result.turn_ids.setdefault(done.uid, []).extend(turn.turn_ids)
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
