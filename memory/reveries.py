"""Reveries: the ghosts forgotten memories leave (docs/design.md section 7), read back vaguely.

`memory.consolidation.write_reverie` stores one when a faded episode (salience < 0.1) is
forgotten: its embedding blurred by uniform noise (+-0.3 per coordinate, re-normalised, so a
reverie is only loosely near what it was about), the ids of its neighbours, and a one-line
impression ("something about penguins, Antarctica"). `vague_recall` finds the reveries near a
message; the reply shows them as faded impressions ("I vaguely remember something about..."),
never as facts or memories.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.services import Services

REVERIE_FLOOR = 0.15
"""Least cosine between a message and a reverie to recall it. The noise leaves a reverie at
roughly a third of its original similarity to anything, and unrelated texts near zero."""


async def vague_recall(
    services: Services, tenant: str, text: str, *, limit: int = 2, floor: float = REVERIE_FLOOR
) -> list[dict[str, Any]]:
    """The tenant's reveries nearest `text`, best first: impression, when the memory was made
    and when it faded, and the score."""
    if not text.strip():
        return []
    query = (await services.embedder.embed_query(text)).tolist()
    hits = await services.vectors.search(
        "reveries", tenant, dense=query, limit=limit, score_threshold=floor
    )
    return [
        {
            "text": str(h.payload.get("text", "")),
            "created_at": str(h.payload.get("created_at", "")),
            "faded_at": str(h.payload.get("faded_at", "")),
            "score": h.score,
        }
        for h in hits
    ]
