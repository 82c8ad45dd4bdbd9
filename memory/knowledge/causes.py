"""What motivated a decision, plan or goal, offline: the LED_TO causes `memory.knowledge.facts`
links when no model named them (`Proposition.because`).

Earlier facts of the same subject, and earlier turns no fact captured, that share a content
word with the decision and are similar enough to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from memory.schema import Episode, Fact, as_utc, normalise_text
from memory.stores.base import VectorHit
from memory.text.sparse import tokenize

if TYPE_CHECKING:
    from memory.services import Services

CAUSE_MIN = 0.45
"""An earlier fact motivates a decision or plan when it shares a content word and is this similar."""
CAUSE_TURN_MIN = 0.35
"""An earlier turn no fact captured motivates it when it shares a content word and is this
similar (turns are longer than facts, so their cosine to a one-line decision runs lower)."""
MAX_CAUSES = 3
"""At most this many causes are linked to one decision."""


_CUE_WORDS = frozenset(tokenize("decided decide choose chose plan planning want going stop"))


async def motivations(services: Services, fact: Fact, vec: np.ndarray) -> list[str]:
    """Earlier facts of the same subject that share a content word with the decision and are
    at least `CAUSE_MIN` similar to it, most similar first."""
    hits: list[VectorHit] = await services.vectors.search(
        "knowledge", fact.tenant, dense=vec.tolist(), limit=10, score_threshold=CAUSE_MIN
    )
    uids = [str(h.payload.get("fact_uid", "")) for h in hits]
    sims = {u: h.score for u, h in zip(uids, hits, strict=True)}
    words = _content_words(fact.text)
    out = []
    for other in await services.graph.facts.get_many(fact.tenant, uids):
        if other.uid == fact.uid or normalise_text(other.subject) != normalise_text(fact.subject):
            continue
        if other.superseded_by is not None:  # what the decision replaced did not motivate it
            continue
        if as_utc(other.learned_at or other.valid_from) >= as_utc(
            fact.learned_at or fact.valid_from
        ):
            continue
        if words & set(tokenize(other.text)):
            out.append(other.uid)
    return sorted(out, key=lambda u: -sims.get(u, 0.0))


async def motivating_turns(
    services: Services, episode: Episode, fact: Fact, vec: np.ndarray, fact_causes: list[str]
) -> list[str]:
    """Earlier turns of the same user that no fact captured but that share a content word with
    the decision and are at least `CAUSE_TURN_MIN` similar to it (the episode is the cause)."""
    hits = await services.vectors.search(
        "derivatives", episode.tenant, dense=vec.tolist(), limit=10, score_threshold=CAUSE_TURN_MIN
    )
    stated = await services.graph.facts.sources_many(episode.tenant, fact_causes)
    covered = {source for sources in stated.values() for source in sources}
    words = _content_words(fact.text)
    out: list[str] = []
    for h in hits:
        uid = str(h.payload.get("episode_uid", ""))
        if not uid or uid == episode.uid or uid in covered or uid in out:
            continue
        created = h.payload.get("created_at")
        if isinstance(created, str):
            created = datetime.fromisoformat(created)
        if not isinstance(created, datetime) or as_utc(created) >= as_utc(episode.created_at):
            continue
        if words & _content_words(str(h.payload.get("text", ""))):
            out.append(uid)
    return out[: MAX_CAUSES - len(fact_causes)]


def _content_words(text: str) -> set[str]:
    return {w for w in tokenize(text) if len(w) > 3} - _CUE_WORDS - set(tokenize("user"))
