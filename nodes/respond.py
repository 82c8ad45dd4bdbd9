"""respond: write the reply from identity, personality, temporal context and fenced memories.

The node reads what the prompt needs (the temporal context, the personality snapshot, the
standing instructions, the thread's compressed layers, the apperception score), builds the reply
prompt of `tasks.respond` (with the chapters of `tasks.narrative_context` for a question about
the person's course over time) and streams the model's reply; offline or when the model fails,
`tasks.narrative_context.chapters_answer` tells the chapters of such a question and
`tasks.offline_answer.plain_answer` replies from memory otherwise.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from langchain_core.messages import AIMessage, SystemMessage
from langgraph.runtime import Runtime

from memory import clock
from memory.beliefs.apperception import load as load_apperception
from memory.retrieval.chapters import is_narrative
from memory.retrieval.facts import standing_instructions
from memory.schema import NO_THREAD
from memory.services import Services, available
from memory.services.usage import Usage
from memory.stores.base import StoreUnavailable
from memory.text.ordering import is_ordering
from memory.write.compression import (
    ThreadLayers,
    load_layers,
)
from nodes.compress import budgets_of
from nodes.context import Context, context_of
from nodes.record import thread_of
from nodes.state import AgentState, Recorded, turn_of
from tasks.diary_context import diary_block
from tasks.directives import not_a_belief, unsafe_request
from tasks.knowledge_prompt import (
    facts_block,
    features_block,
    instructions_block,
    split_memories,
)
from tasks.llm import generate
from tasks.narrative_context import chapters_answer, chapters_block, with_chapters
from tasks.offline_answer import (
    memory_sides,
    plain_answer,
    sentences,
)
from tasks.respond import (
    DEFAULT_SNAPSHOT,
    acquaintance_block,
    beliefs_block,
    core_identity,
    history,
    length_note,
    memory_block,
    memory_note,
    reveries_block,
    system_prompt,
    thread_block,
)
from tasks.temporal import describe, temporal_context

log = logging.getLogger("mneme.nodes.respond")


async def respond(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the reply to the user's latest message."""
    ctx = context_of(runtime.context)
    turn = turn_of(state)
    # The prompt blocks read plain dicts (tasks/ knows no channel types).
    memories, facts = split_memories(cast(list[dict[str, Any]], state.get("memories") or []))
    # A view about what the assistant may disclose or do with others' data, or an instruction,
    # is never voiced, also one stored before the rule (`tasks.directives.not_a_belief`).
    beliefs = [b for b in state.get("beliefs") or [] if not not_a_belief(str(b.get("statement")))]
    features = [
        f
        for f in state.get("features") or []
        if not not_a_belief(str(f.get("text")), of_assistant=True)
    ]
    now = clock.now()
    usage = Usage()
    snapshot = DEFAULT_SNAPSHOT
    here = await available()
    episode: Recorded = state.get("episode") or {}
    instructions = []
    layers = ThreadLayers(thread_id="")
    acquaintance = ""
    try:
        services = here.services
        if services is None:  # the stores cannot be opened: the reply goes on without them
            raise StoreUnavailable(here.reason or "the memory stores cannot be opened")
        temporal = await temporal_context(services, ctx.user_id, now, ctx.tz)
        current = await services.graph.snapshots.current(ctx.user_id)
        if current is not None:
            snapshot = current.text
        instructions = [  # the policy holds for instructions stored before it, too
            f
            for f in await standing_instructions(
                services, ctx.user_id, str(turn.get("text", "")), now
            )
            if not unsafe_request(f.text)
        ]
        thread_id = episode.get("thread_id") or thread_of(runtime)
        if thread_id != NO_THREAD:
            layers = await load_layers(services.graph, ctx.user_id, thread_id)
        acquaintance = acquaintance_block(await load_apperception(services.graph, ctx.user_id))
    except Exception as exc:
        log.warning(
            "could not read temporal context, personality, instructions, the thread or the "
            "apperception score (%s)",
            exc,
        )
        temporal = describe(now, ctx.tz, [])
    ordering = is_ordering(str(turn.get("text", "")))
    # Only this turn's question reads them (a turn routed past retrieval keeps the last ones).
    chapters = list(state.get("chapters") or []) if is_narrative(str(turn.get("text", ""))) else []
    memories_text, levels = memory_block(
        memories, ctx.memory_token_budget, now, chronological=ordering
    )
    outcome = episode.get("outcome", "stored")
    reply: str | None = None
    if not turn.get("empty"):
        prompt = [
            SystemMessage(
                content=with_chapters(
                    system_prompt(
                        core_identity(here.settings.core_identity),
                        snapshot,
                        temporal,
                        memories_text,
                        beliefs_block(beliefs),
                        outcome,
                        facts_block(facts),
                        instructions_block(instructions),
                        features_block(features),
                        reveries_block(list(state.get("reveries") or [])),
                        thread_block(layers, budgets_of(ctx)),
                        ordering,
                        acquaintance,
                        diary_block(list(state.get("diary") or [])),
                    ),
                    chapters_block(chapters),
                )
            ),
            *history(state.get("messages", [])),
        ]
        reply = await generate(
            "respond",
            prompt,
            chat=here.chat,
            usage=usage,
            model=ctx.model_respond,
            max_tokens=ctx.max_reply_tokens,
        )
    if reply is None and chapters:  # offline: the chapters, as stored
        reply = chapters_answer(chapters)
    if reply is None:
        remembered = outcome in ("stored", "outbox")
        by_rank = sorted(facts + memories, key=lambda m: int(m.get("rank") or 10**6))
        by_rank = await with_closeness(here.services, str(turn.get("text", "")), by_rank)
        diary = list(state.get("diary") or [])
        reply = plain_answer(turn, by_rank, beliefs, temporal, now, remembered, diary)
    reply += length_note(turn, outcome) + memory_note(episode)
    used: list[dict[str, Any]] = [{**m, "detail": "fact"} for m in facts] + [
        {**m, "detail": lvl} for m, lvl in zip(memories, levels, strict=True) if lvl != "omitted"
    ]
    return {
        "messages": [AIMessage(content=reply)],
        "temporal": temporal,
        "memories": used,
        "usage": usage.update(),
    }


async def with_closeness(
    services: Services | None, question: str, memories: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The memories, each turn with how close in meaning each of its sentences is to the question
    (`closeness`: sentence -> cosine), which the offline answer reads to choose the sentence it
    quotes when the question's words single none out; as they are when that cannot be measured."""
    parts = {
        id(m): [p.strip() for p in memory_sides(str(m.get("content", "")))]
        for m in memories
        if m.get("kind") != "fact"
    }
    said = list(dict.fromkeys(s for sides in parts.values() for p in sides for s in sentences(p)))
    if services is None or not said or not question.strip():
        return memories
    try:
        asked = await services.embedder.embed_query(question)
        rows = await services.embedder.embed_documents(said)
    except Exception as exc:  # the quote falls back to the question's words
        log.warning("could not embed the memories' sentences (%s)", exc)
        return memories
    cosine = dict(zip(said, (float(v) for v in rows @ asked), strict=True))
    return [
        {**m, "closeness": {s: cosine[s] for p in parts[id(m)] for s in sentences(p)}}
        if id(m) in parts
        else m
        for m in memories
    ]
