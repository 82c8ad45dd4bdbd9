"""The associative path: entities named in the query → graph traversal → their episodes.

Runs beside the vector search. An entity named in few episodes is a strong pointer (it brings its
episodes in as candidates); one named in many (the person you talk to every day) only nudges the
ranking. `hops` walks RELATED_TO edges (what bookkeeping writes: entities one turn names
together, and the relations facts state, "Ben's sister is Carla"), so a question about Ben also
reaches the few turns about Carla, at half the share, and brings them in as candidates; a hop
that reaches many turns is left out. The result is a graph-proximity score per episode in [0, 1]: the share of the query's
entities (weighted by how specific each is) that reach the episode, closer hops weighing more.

No model and no prompt: recognition is whole-word matching of known entity names, looked up by
the query's word runs (an index lookup, not a scan of the tenant's entities).
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, field

from memory.schema import Entity, normalise_text
from memory.stores.base import GraphStore

__all__ = ["Association", "associate", "entities_in", "name_candidates"]

_POSSESSIVE = re.compile(r"['\u2019]s\b")


@dataclass(slots=True)
class Association:
    """Episodes reached from the query's entities."""

    entities: list[str] = field(default_factory=list)
    """Names recognised in the query."""
    proximity: dict[str, float] = field(default_factory=dict)
    """Episode uid → graph proximity in (0, 1]."""
    pointers: set[str] = field(default_factory=set)
    """Episodes reached through a specific entity or a specific relation of one (few episodes
    at that distance): worth adding as candidates."""


MAX_NAME_WORDS = 5
"""Longest entity name (in words) the query is searched for."""


def name_candidates(query: str) -> list[str]:
    """Every run of 1-`MAX_NAME_WORDS` words of the query, as an entity name might be written
    (punctuation inside kept, possessives and surrounding punctuation dropped): the keys the
    associative path looks up instead of scanning the tenant's entities."""
    text = normalise_text(_POSSESSIVE.sub("", query))
    variants = (
        [w.strip(".,;:!?\"'()[]{}") for w in text.split()],
        [w.strip(",;:!?\"'()[]{}") for w in text.split()],  # "St." as written
        re.sub(r"[^\w]+", " ", text).split(),
    )
    out: dict[str, None] = {}
    for tokens in variants:
        tokens = [t for t in tokens if t]
        for size in range(1, MAX_NAME_WORDS + 1):
            for start in range(0, len(tokens) - size + 1):
                out[" ".join(tokens[start : start + size])] = None
    return list(out)


def entities_in(query: str, entities: list[Entity]) -> list[Entity]:
    """Known entities whose name occurs in the query as whole words (longest names first)."""
    text = " " + re.sub(r"[^\w]+", " ", normalise_text(_POSSESSIVE.sub("", query))) + " "
    found: list[Entity] = []
    taken: list[str] = []
    for entity in sorted(entities, key=lambda e: -len(e.name)):
        name = re.sub(r"[^\w]+", " ", normalise_text(entity.name)).strip()
        if len(name) < 2 or f" {name} " not in text:
            continue
        if any(f" {name} " in f" {t} " for t in taken):
            continue  # "New York" already matched; skip "York"
        taken.append(name)
        found.append(entity)
    return found


async def associate(
    graph: GraphStore,
    tenant: str,
    query: str,
    *,
    hops: int = 1,
    limit: int = 400,
    pointer_max: int = 12,
) -> Association:
    """Entities named in `query` and the proximity of the episodes they reach (≤ `hops`)."""
    known = await graph.entities.named(tenant, name_candidates(query))
    found = entities_in(query, known)
    if not found:
        return Association()
    names = [e.name for e in found]
    reached = await asyncio.gather(
        *(graph.entities.episodes_near(tenant, [name], hops, limit) for name in names)
    )
    # Specific entities (few episodes name them) weigh more: an idf over the episodes that name
    # each one itself, so an entity's relations (RELATED_TO) do not make it look common.
    direct = [[h for h in hits if h.distance == 0] for hits in reached]
    total = max((len(d) for d in direct), default=1)
    weights = [math.log(1.0 + max(1, total) / max(1, len(d))) for d in direct]
    norm = sum(weights) or 1.0
    out = Association(entities=names)
    for hits, weight in zip(reached, weights, strict=True):
        # Each distance is a set of its own: the episodes naming the entity, and those naming
        # its relations (Ben → his sister Carla → the turns about Carla). A hop counts only
        # where few episodes (all the entity's relations together) sit at its distance; the
        # many turns one hop from a person named everywhere say nothing about the question.
        # The farthest distance of a walk cut at `limit` is incomplete: its count says nothing.
        at: dict[int, list[str]] = {}
        for hit in hits:
            at.setdefault(hit.distance, []).append(hit.episode_uid)
        cut = hits[-1].distance if len(hits) >= limit else None
        for distance, uids in at.items():
            specific = distance != cut and len(uids) <= pointer_max
            if distance and not specific:
                continue
            share = weight / norm / (1.0 + distance)
            for uid in uids:
                out.proximity[uid] = out.proximity.get(uid, 0.0) + share
            if specific:
                out.pointers.update(uids)
    return out
