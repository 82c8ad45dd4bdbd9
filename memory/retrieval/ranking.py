"""Scoring helpers of retrieval: rank fusion, query-term coverage (the non-LLM rerank), neighbour
smoothing, recency and a token estimate (docs/design.md section 5).

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import datetime

from memory.text.sparse import MAX_TOKEN_CHARS, STOPWORDS, stem

__all__ = [
    "coverage",
    "occurs",
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
    that hold all the words asked about. Equal to |query_tokens ∩ token_set(text)| / |query_tokens|
    without tokenising the text: each token is looked for where it could be (see `occurs`).
    """
    if not query_tokens:
        return 0.0
    normal = unicodedata.normalize("NFKC", text).casefold()
    return sum(1 for t in query_tokens if occurs(t, normal)) / len(query_tokens)


def best_coverage(token_sets: Sequence[set[str]], text: str) -> float:
    """`coverage` of the query that `text` covers best, for a search of several queries (the
    passes of one retrieval): a memory that answers one sub-query in full is not marked down
    for lacking the words of the others."""
    sets = [tokens for tokens in token_sets if tokens]
    if len(sets) <= 1:
        return coverage(sets[0], text) if sets else 0.0
    normal = unicodedata.normalize("NFKC", text).casefold()  # once, not once per sub-query
    return max(sum(1 for t in tokens if occurs(t, normal)) / len(tokens) for tokens in sets)


def occurs(token: str, normal: str) -> bool:
    """Whether `sparse.tokenize` of a text would yield `token`; `normal` is the text NFKC'd and
    casefolded. Stemming rewrites at most a word's last letter of what it keeps (hoping → hope,
    happy → happi), so a word with the token is one that starts with all but its last letter:
    a substring test rules most texts out, and only words so starting are stemmed."""
    if len(token) == 1 and _CJK_CHAR.match(token):
        return token in normal
    prefix = token[:-1] if len(token) > 1 else token
    at = normal.find(prefix)
    while at >= 0:
        if at == 0 or not _WORD_CHAR.match(normal, at - 1):  # a word starts here
            match = _WORD.match(normal, at)
            word = match.group()[:MAX_TOKEN_CHARS] if match else ""
            if word and word not in STOPWORDS and stem(word) == token:
                return True
        at = normal.find(prefix, at + 1)
    return False


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORD_CHAR = re.compile(f"[^\\W_{_CJK}]")
"""A character `sparse.tokenize` puts inside a word (letters and digits, not `_`, not CJK)."""
_WORD = re.compile(f"[^\\W_{_CJK}]+")


def smooth(
    relevance: Mapping[str, float],
    adjacent: Mapping[str, tuple[str | None, str | None]],
    weight: float,
    *,
    paired: Container[str] = (),
    paired_weight: float | None = None,
) -> dict[str, float]:
    """Add `weight` x the better relevance of each episode's previous and next turn in its thread
    (`paired_weight` instead for the episodes in `paired`, when given).

    A question often matches the turn that asked ("Did you see the game?") better than the one
    that answers; this lets the answer ride on its neighbour. Unknown neighbours count 0.
    """
    out = dict(relevance)
    if weight <= 0 and not paired_weight:
        return out
    for uid, value in relevance.items():
        w = paired_weight if paired_weight is not None and uid in paired else weight
        if w <= 0:
            continue
        before, after = adjacent.get(uid, (None, None))
        near = max(
            relevance.get(before, 0.0) if before else 0.0,
            relevance.get(after, 0.0) if after else 0.0,
        )
        out[uid] = value + w * near
    return out


def recency(created_at: datetime, now: datetime, days: float) -> float:
    """1 / (1 + age_days / days): 1.0 now, 0.5 after `days`."""
    age = max(0.0, (now - created_at).total_seconds() / 86400.0)
    return 1.0 / (1.0 + age / max(days, 1e-9))


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters per token), at least 1."""
    return max(1, (len(text) + 3) // 4)
