"""The bookkeeping graph's last stage: the episode's salience and utility, its Emotion nodes
(`memory.knowledge.emotions`) and the Goal nodes of the goal facts it states (`memory.knowledge.goals`); it
becomes `processed`.

Salience (`memory.sleep.salience`) needs the episode's connections, so it runs after `link` has
written its topics and entities; the heuristic appraisal (emotion, identity, novelty) reads the
turn and its stored ESS. Consolidation recomputes both as the episode ages and is recalled.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.knowledge.emotions import record_emotions
from memory.knowledge.goals import record_goals
from memory.schema import EpisodeStatus, as_utc
from memory.services import get_services
from memory.sleep.salience import episode_salience, episode_utility
from nodes.context import Context, context_of
from nodes.state import BookkeepingState, episode_of


async def salience(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Score the episode at the time it was said (age 0), record its emotions and goals, and
    mark it `processed` (last, so a run killed before is redone whole)."""
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    tenant, uid = episode.tenant, episode.uid
    connections = (await services.graph.episodes.connections(tenant, [uid])).get(uid, 0)
    said = as_utc(episode.created_at)
    value = episode_salience(episode, connections, said)
    utility = episode_utility(episode, said)
    await services.graph.episodes.update_scores(tenant, uid, salience=value, utility_score=utility)
    emotions = await record_emotions(services, episode)
    goals = await record_goals(services, episode)
    await services.graph.episodes.set_status(tenant, uid, EpisodeStatus.PROCESSED)
    return {
        "salience": value,
        "emotions": [e.name for e in emotions],
        "goals_created": goals,
        "status": EpisodeStatus.PROCESSED.value,
    }
