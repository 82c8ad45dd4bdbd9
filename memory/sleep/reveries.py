"""Reveries: the ghosts forgotten memories leave (docs/design.md section 7), read back vaguely.

`memory.sleep.consolidation.write_reverie` stores one when a faded episode (salience < 0.1) is
forgotten: its embedding blurred by uniform noise (+-0.3 per coordinate, re-normalised, so a
reverie is only loosely near what it was about), the ids of its neighbours, and a one-line
impression ("something about penguins, Antarctica"). `vague_recall` finds the reveries a
message is about: those whose impression shares a word with it, and those whose blurred embedding
is still near it. The reply shows them as faded impressions ("I vaguely remember something
about..."), never as facts or memories.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory.stores.base import SparseVector, VectorFilter
from memory.text.sparse import encode_query, token_id, tokenize

if TYPE_CHECKING:
    from memory.services import Services

REVERIE_FLOOR = 0.15
"""Least cosine between a message and a reverie to recall it. The noise leaves a reverie at
roughly a third of its original similarity to anything, and unrelated texts near zero. The
noise also moves a score by about 0.05 either way, so even a message that names the memory's
subject falls under the floor now and then (about 1 in 30 for "Have I seen anything about
penguins?" against a penguin documentary), so the impression's words recall it too."""

IMPRESSION_PREFIX = "something about "
"""How every impression starts; its words match nothing (a reverie's sparse vector is built from
what follows)."""

_PREFIX_TOKENS = frozenset(tokenize(IMPRESSION_PREFIX))


async def vague_recall(
    services: Services, tenant: str, text: str, *, limit: int = 2, floor: float = REVERIE_FLOOR
) -> list[dict[str, Any]]:
    """The tenant's reveries `text` is about, best first: those whose impression shares a word
    with it, then those whose blurred cosine to it is at least `floor`. Each with its
    impression, when the memory was made and when it faded, and its blurred cosine."""
    if not text.strip():
        return []
    query = (await services.embedder.embed_query(text)).tolist()
    words = query_words(text)
    named = (
        await services.vectors.search("reveries", tenant, sparse=words, limit=limit)
        if words.indices
        else []
    )
    near = await services.vectors.search(
        "reveries", tenant, dense=query, limit=limit, score_threshold=floor
    )
    if named:  # their blurred cosines, so every reverie is reported on one scale
        named = await services.vectors.search(
            "reveries",
            tenant,
            dense=query,
            limit=len(named),
            filter=VectorFilter(episode_uids=[str(h.payload.get("episode_uid")) for h in named]),
        )
    # Named ones first (the message shares a word with the impression), then the near ones.
    ids = {h.id for h in named}
    hits = [*named, *(h for h in near if h.id not in ids)][:limit]
    return [
        {
            "text": str(h.payload.get("text", "")),
            "created_at": str(h.payload.get("created_at", "")),
            "faded_at": str(h.payload.get("faded_at", "")),
            "score": h.score,
        }
        for h in hits
    ]


def query_words(text: str) -> SparseVector:
    """The sparse query of a message without the words every impression starts with."""
    full = encode_query(text)
    drop = {token_id(t) for t in _PREFIX_TOKENS}
    kept = [i for i in full.indices if i not in drop]
    return SparseVector(indices=tuple(kept), values=(1.0,) * len(kept))
