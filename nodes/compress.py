"""thread: the bookkeeping stage that keeps a thread's compressed layers (`memory.write.compression`).

After an episode is indexed, the turns of its thread that left the verbatim window move into the
key exchanges (extractive in every mode: a selection of what was said, never a paraphrase);
when the key exchanges overflow their budget, the oldest are folded into the summary and the
impression by the fold task (`tasks.compress`). A fold that fails keeps the previous layers
unchanged and the turns where they were, so the next episode of the thread tries again; after
`MAX_FAILURES` failed folds in a row the extractive fold is used, so the layers never grow past
their budgets for long.

Runs in bookkeeping, never in the reply's foreground. The layers are a view; the episodes stay.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from memory.schema import NO_THREAD
from memory.services import get_services
from memory.services.usage import Usage
from memory.write.compression import (
    MOVE_BATCH,
    VERBATIM_TURNS,
    Budgets,
    advance,
    extractive_digest,
    load_layers,
    save_layers,
)
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.compress import (
    fold,
)
from tasks.content import without_recall_echo

log = logging.getLogger("mneme.nodes.compress")

MAX_FAILURES = 3


def budgets_of(ctx: Context) -> Budgets:
    """The layer budgets of the run's context."""
    return Budgets(
        exchanges=ctx.thread_exchange_tokens,
        summary=ctx.thread_summary_tokens,
        impression=ctx.thread_impression_tokens,
    )


async def compress_thread(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Move the episode's thread's turns that left the verbatim window down the layers."""
    ctx = context_of(runtime.context)
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    usage = Usage()
    if episode.thread_id == NO_THREAD:  # stateless runs share no conversation
        return {"thread": {"moved": 0}, "usage": usage.update()}
    budgets = budgets_of(ctx)
    try:
        async with services.locks.get("thread", ctx.user_id):
            layers = await load_layers(services.graph, ctx.user_id, episode.thread_id)
            newer = await services.graph.episodes.in_thread(
                ctx.user_id,
                episode.thread_id,
                after=layers.cursor,
                limit=MOVE_BATCH + VERBATIM_TURNS,
            )
            moved, moving, overflow = advance(layers, newer, budgets, without_recall_echo)
            if not moving:
                return {"thread": {"moved": 0}, "usage": usage.update()}
            folded: tuple[list[str], str] | None = None
            if overflow:
                if layers.failures >= MAX_FAILURES - 1:
                    folded = extractive_digest(layers.summary, layers.impression, overflow, budgets)
                else:
                    folded = await fold(
                        services,
                        ctx.model_structured,
                        layers.summary,
                        layers.impression,
                        overflow,
                        budgets,
                        usage,
                    )
                if folded is None:
                    failures = layers.failures + 1
                    await save_layers(
                        services.graph,
                        ctx.user_id,
                        layers.model_copy(update={"failures": failures}),
                    )
                    return {
                        "thread": {"moved": 0, "failed": failures},
                        "usage": usage.update(),
                    }
                moved = moved.model_copy(
                    update={"summary": folded[0], "impression": folded[1], "failures": 0}
                )
            await save_layers(services.graph, ctx.user_id, moved)
    except Exception as exc:
        note = stage_note("thread", exc)
        return {"notes": [*(state.get("notes") or []), note], "usage": usage.update()}
    report = {
        "moved": len(moving),
        "folded": len(overflow),
        "exchanges": len(moved.exchanges),
        "summary": len(moved.summary),
    }
    return {"thread": report, "usage": usage.update()}
