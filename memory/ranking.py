"""Scoring helpers of retrieval: rank fusion, query-term coverage (the non-LLM rerank), neighbour
smoothing, recency and a token estimate (docs/design.md section 5).

Pure functions: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache

from memory.sparse import token_set

__all__ = [
    "coverage",
    "estimate_tokens",
    "recency",
    "rrf_lists",
    "smooth",
]


def rrf_lists(lists: Iterable[tuple[float, Sequence[str]]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: Σ weight / (k + rank) over ranked id lists (rank from 1)."""
    scores: dict[str, float] = {}
    for weight, items in lists:
        for rank, item in enumerate(items, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def coverage(query_tokens: set[str], text: str) -> float:
    """Share of the query's content tokens (see `sparse.tokenize`) that occur in `text`, 0..1.

    The non-LLM rerank: BM25 lets one rare word carry a fragment; coverage prefers fragments
    that hold all the words asked about.
    """
    if not query_tokens:
        return 0.0
    return len(query_tokens & _tokens(text)) / len(query_tokens)


@lru_cache(maxsize=20_000)
def _tokens(text: str) -> frozenset[str]:
    # Memories are re-ranked again and again; a long turn costs ~0.3 ms to tokenise.
    return token_set(text)


def smooth(
    relevance: Mapping[str, float],
    adjacent: Mapping[str, tuple[str | None, str | None]],
    weight: float,
) -> dict[str, float]:
    """Add `weight` x the better relevance of each episode's previous and next turn in its thread.

    A question often matches the turn that asked ("Did you see the game?") better than the one
    that answers; this lets the answer ride on its neighbour. Unknown neighbours count 0.
    """
    out = dict(relevance)
    if weight <= 0:
        return out
    for uid, value in relevance.items():
        before, after = adjacent.get(uid, (None, None))
        near = max(
            relevance.get(before, 0.0) if before else 0.0,
            relevance.get(after, 0.0) if after else 0.0,
        )
        out[uid] = value + weight * near
    return out


def recency(created_at: datetime, now: datetime, days: float) -> float:
    """1 / (1 + age_days / days): 1.0 now, 0.5 after `days`."""
    age = max(0.0, (now - created_at).total_seconds() / 86400.0)
    return 1.0 / (1.0 + age / max(days, 1e-9))


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters per token), at least 1."""
    return max(1, (len(text) + 3) // 4)
