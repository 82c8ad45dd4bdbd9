"""retrieve: run the router's recipe over the tenant's memory and emit scored candidates.

The search itself lives in `memory.retrieval.retrieve`; this node turns the route decision into a recipe
and queries, adds the agent's beliefs for BELIEF_QUERY turns and its semantic features when the
router asks (`search_features`), the reveries near the message (`memory.sleep.reveries`), the
diary entries of the period the message asks about (`memory.retrieval.diary`) and the chapters
a question about the person's course over time is about (`memory.retrieval.chapters`; both
beside the candidates, never among them), and degrades to "no memories" with a logged warning if a store
fails, so the reply still happens.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from langgraph.runtime import Runtime

from memory import clock
from memory.beliefs.features import search_features
from memory.beliefs.views import belief_views
from memory.retrieval.candidates import Candidate
from memory.retrieval.chapters import chapters_for
from memory.retrieval.diary import diary_of_period
from memory.retrieval.recipes import Recipe, get_recipe, with_overrides
from memory.retrieval.retrieve import retrieve as search_memory
from memory.services import Services, available
from memory.sleep.reveries import neighbour_candidates, vague_recall
from nodes.context import Context, context_of
from nodes.state import AgentState, Route, found_state, route_of, turn_of
from tasks.content import prompt_text

log = logging.getLogger("mneme.nodes.retrieve")

MAX_BELIEFS = 5
MAX_FEATURES = 5
FOUND = ("candidates", "beliefs", "features", "reveries", "diary", "chapters")
"""What the node writes: the memories found and the context beside them."""


def queries_for(route: Route, text: str) -> list[str]:
    """The search queries of a route: each pass's rewrite, or the message itself."""
    out = []
    for p in route.get("passes") or []:
        query = (p.get("query") or "").strip()
        out.append(query or text)
    return list(dict.fromkeys(out)) or [text]


def pass_weights(route: Route) -> dict[str, float]:
    """Credibility weights for the search: the strongest each pass asked for."""
    weights: dict[str, float] = {}
    for p in route.get("passes") or []:
        for name, value in (p.get("signal_weights") or {}).items():
            weights[name] = max(weights.get(name, 0.0), float(value))
    return weights


def plan(route: Route, text: str) -> tuple[Recipe, list[str], dict[str, float]]:
    """What a route decision searches with: the recipe, the queries and the credibility weights.

    `mneme eval retrieval` plans its questions with this function too, so the eval measures
    exactly the search the agent runs.
    """
    kind = route["kind"]
    recipe = with_overrides(
        get_recipe("SIMPLE" if kind == "NONE" else kind),
        neighbours=2 if route["temporal_expansion"] else 0,
    )
    return recipe, queries_for(route, text), pass_weights(route)


async def retrieve(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search memory as the route decided; candidates best first, with provenance."""
    ctx = context_of(runtime.context)
    route = route_of(state)
    text = prompt_text(turn_of(state))
    recipe, queries, weights = plan(route, text)
    here = await available()
    services = here.services
    if services is None:  # the stores cannot be opened: the reply goes on without memories
        log.warning("memory is unavailable (%s); answering without memories", here.reason)
        return {key: [] for key in FOUND}
    try:
        found = await search_memory(
            services, ctx.user_id, queries, recipe, clock.now(), signal_weights=weights
        )
        beliefs: list[dict[str, Any]] = []
        if (
            route["kind"] == "BELIEF_QUERY"
        ):  # the belief, its stance and its evidence episodes by strength
            views = await belief_views(services, ctx.user_id, text, limit=MAX_BELIEFS)
            beliefs = [v.as_dict() for v in views]
        features = (
            await search_features(services, ctx.user_id, text, limit=MAX_FEATURES)
            if route["search_features"]
            else []
        )
    except Exception as exc:
        log.warning("memory search failed (%s); answering without memories", exc)
        return {key: [] for key in FOUND}
    # Extra context beside the memories found: a failure here costs only that context.
    reveries = await _context_or_none("reveries", vague_recall(services, ctx.user_id, text))
    # A recalled reverie brings back the living turns its forgotten one sat between.
    around = await _context_or_none(
        "reverie neighbours", _around(services, ctx.user_id, reveries, found, recipe)
    )
    diary = await _context_or_none(
        "diary", diary_of_period(services, ctx.user_id, text, clock.now())
    )
    chapters = await _context_or_none("chapters", _chapters(services, ctx.user_id, text))
    return {
        "candidates": [found_state(c) for c in found] + around,
        "beliefs": beliefs[:MAX_BELIEFS],
        "features": features,
        "reveries": reveries,
        "diary": diary,
        "chapters": chapters,
    }


async def _around(
    services: Services,
    tenant: str,
    reveries: list[dict[str, Any]],
    found: list[Candidate],
    recipe: Recipe,
) -> list[dict[str, Any]]:
    """The candidates a recalled reverie's neighbours make, as the state holds them."""
    extra = await neighbour_candidates(services, tenant, reveries, found, recipe)
    return [dict(found_state(c)) for c in extra]


async def _chapters(services: Services, tenant: str, text: str) -> list[dict[str, Any]]:
    """The chapters a narrative question is about, as plain dicts for the state."""
    found = await chapters_for(services, tenant, text, clock.now())
    return [c.model_dump(mode="json") for c in found]


async def _context_or_none(
    what: str, lookup: Awaitable[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The lookup's entries, or none (logged) when it fails: the reply keeps its memories."""
    try:
        return await lookup
    except Exception as exc:
        log.warning("%s lookup failed (%s); answering without it", what, exc)
        return []
