"""rerank: order the retrieved candidates for the reply and keep the router's `n_results`.

It runs the rerank task (`tasks.rerank`: the model's listwise ranking, or the retrieval score
order offline, on failure, and for SIMPLE turns when the context says so) and marks the memories
kept as accessed (retrieval strengthens memory: the next sleep raises their salience and
utility, which keep them above search's salience floor and out of forgetting, and memories
kept together are linked; the ranking weighs salience, recency and links 0,
docs/adr/0148-one-ranking-reads-memory-state.md).
"""

from __future__ import annotations

import logging
from typing import Any, cast

from langgraph.runtime import Runtime

from memory import clock
from memory.services import available
from memory.services.usage import Usage
from nodes.context import Context, context_of
from nodes.state import AgentState, Found, route_of, turn_of
from tasks.content import prompt_text
from tasks.rerank import (
    MAX_CANDIDATES,
    apply_ranking,
    rank,
)
from tasks.route import result_count

log = logging.getLogger("mneme.nodes.rerank")


async def rerank(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Order the candidates by relevance and keep the router's `n_results`."""
    ctx = context_of(runtime.context)
    route = route_of(state)
    n = result_count(route)
    candidates = list(state.get("candidates") or [])[:MAX_CANDIDATES]
    usage = Usage()
    here = await available()
    result = await rank(
        prompt_text(turn_of(state)),
        candidates,
        route["kind"],
        chat=here.chat,
        usage=usage,
        rerank_simple=ctx.rerank_simple,
        model=ctx.model_structured,
    )
    memories = cast(list[Found], apply_ranking(candidates, result.ranking, n))
    if memories and here.services is not None:
        try:
            await here.services.graph.episodes.record_access(
                ctx.user_id, [m["episode_uid"] for m in memories], clock.now()
            )
        except Exception as exc:  # strengthening memory must never cost the reply
            log.warning("could not record memory access: %s", exc)
    return {"memories": memories, "usage": usage.update()}
