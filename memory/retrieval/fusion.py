"""Fusion: ranked lists of one query (dense, sparse, any other) into one relevance per item.

Each list holds, per item (an episode; any key), the best raw score of the item's points: a
long turn is many fragments, and the turn scores as its best one (max-sim), so its other
fragments never take places of their own. Lists are calibrated before they are added, each on
its own scale: a cosine similarity is already absolute (clamped at 0: below that, unrelated),
a BM25 score is not (it grows with the query's length and rarity), so it is divided by the
list's best. An item a list did not return scores that list's lowest value (it ranked below all
of them). Weights adapt to the query (`dense_gain`): when no top lexical hit holds the
question's words, the lexical list is matching on a stray word, and meaning should decide.

A new list (facts, another collection) plugs in as one more `ScoredList`: its items are episode
uids when its hits point at episodes, or keys of their own, which the caller ranks beside them.

Pure functions: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from memory.retrieval.ranking import coverage, rrf_lists

__all__ = ["Scale", "ScoredList", "dense_gain", "fuse", "lexical_fit"]

Scale = Literal["cosine", "top"]


@dataclass(slots=True)
class ScoredList:
    """One retriever's best score per item for one query (higher is better)."""

    name: str
    scale: Scale
    """`cosine`: absolute, clamped at 0; `top`: divided by the list's best score."""
    weight: float = 1.0
    scores: dict[str, float] = field(default_factory=dict)

    def add(self, item: str, score: float) -> None:
        """Keep the item's best score (max over its fragments)."""
        if item not in self.scores or score > self.scores[item]:
            self.scores[item] = score

    def ranked(self) -> list[str]:
        """Items best first (ties by key)."""
        return sorted(self.scores, key=lambda k: (-self.scores[k], k))

    def calibrated(self) -> tuple[dict[str, float], float]:
        """Scores on the list's scale in [0, 1], and the value of an item it did not return."""
        if not self.scores:
            return {}, 0.0
        if self.scale == "cosine":
            out = {k: max(0.0, v) for k, v in self.scores.items()}
        else:
            top = max(self.scores.values())
            out = {k: (v / top if top > 0 else 0.0) for k, v in self.scores.items()}
        return out, min(out.values())


def fuse(
    lists: Sequence[ScoredList],
    items: Iterable[str],
    *,
    method: Literal["score", "rrf"] = "score",
    rrf_k: int = 60,
) -> dict[str, float]:
    """Relevance of every item: Σ weight x calibrated score (`score`, the best item of every
    list scores Σ weights at most), or weighted reciprocal-rank fusion scaled so that first
    place everywhere is 1 (`rrf`). Empty lists take no part."""
    wanted = list(dict.fromkeys(items))
    used = [lst for lst in lists if lst.scores]
    if method == "rrf":
        fused = rrf_lists(((lst.weight, lst.ranked()) for lst in used), rrf_k)
        best = sum(lst.weight for lst in used) / (rrf_k + 1) or 1.0
        return {k: fused.get(k, 0.0) / best for k in wanted}
    out = dict.fromkeys(wanted, 0.0)
    for lst in used:
        scores, fill = lst.calibrated()
        for k in wanted:
            out[k] += lst.weight * scores.get(k, fill)
    return out


def lexical_fit(query_tokens: set[str], texts: Iterable[str]) -> float:
    """How well the best lexical hits hold the question: the best share of the query's content
    tokens that one of `texts` (the top sparse hits) contains, 0..1."""
    return max((coverage(query_tokens, t) for t in texts), default=0.0)


def dense_gain(fit: float, gain: float) -> float:
    """The dense list's weight factor for a query whose best lexical hits hold `fit` of it:
    1 when one holds every word, 1 + `gain` when none holds any."""
    return 1.0 + gain * (1.0 - min(1.0, max(0.0, fit)))
