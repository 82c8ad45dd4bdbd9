"""Retrieval metrics of the memeval protocol: recall@k, all@k, hit@k, NDCG@10, latency percentiles.

Pure functions over ranked lists of opaque ids; no I/O.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

KS = (1, 5, 10, 20)
ADVERSARIAL = "adversarial"


def recall_at(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Share of the evidence ids found in the top k (1.0 when there is no evidence)."""
    wanted = set(evidence)
    if not wanted:
        return 1.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def all_at(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """1.0 if every evidence id is in the top k, else 0.0."""
    return 1.0 if set(evidence) <= set(ranked[:k]) else 0.0


def hit_at(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """1.0 if any evidence id is in the top k, else 0.0."""
    wanted = set(evidence)
    return 1.0 if not wanted or wanted & set(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], evidence: Iterable[str], k: int = 10) -> float:
    """Binary-relevance NDCG@k (each evidence id counts once, at its first position)."""
    wanted = set(evidence)
    if not wanted:
        return 1.0
    seen: set[str] = set()
    dcg = 0.0
    for i, item in enumerate(ranked[:k]):
        if item in wanted and item not in seen:
            seen.add(item)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), k)))
    return dcg / ideal


def question_metrics(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """Every metric of one question, keyed `R@k`, `all@k`, `hit@k`, `NDCG@10`."""
    out: dict[str, float] = {}
    for k in KS:
        out[f"R@{k}"] = recall_at(ranked, evidence, k)
        out[f"all@{k}"] = all_at(ranked, evidence, k)
        out[f"hit@{k}"] = hit_at(ranked, evidence, k)
    out["NDCG@10"] = ndcg_at(ranked, evidence, 10)
    return out


@dataclass(frozen=True, slots=True)
class Scored:
    """One question's category and metrics."""

    category: str
    metrics: Mapping[str, float]


def _mean(rows: Sequence[Scored]) -> dict[str, float]:
    if not rows:
        return {}
    keys = rows[0].metrics.keys()
    out = {key: sum(r.metrics[key] for r in rows) / len(rows) for key in keys}
    out["n"] = float(len(rows))
    return out


def summarise(rows: Sequence[Scored]) -> dict[str, dict[str, float]]:
    """Mean metrics per category, plus `overall` and `overall_no_adversarial`."""
    by: dict[str, list[Scored]] = defaultdict(list)
    for row in rows:
        by[row.category].append(row)
    out = {category: _mean(items) for category, items in sorted(by.items())}
    out["overall"] = _mean(rows)
    out["overall_no_adversarial"] = _mean([r for r in rows if r.category != ADVERSARIAL])
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


@dataclass(frozen=True, slots=True)
class Ordered:
    """One question with `stale` turns: is the answer ranked above what was true before (or,
    for a `past` question, what is true now), and is it first?"""

    category: str
    above: bool
    """The best-ranked evidence id ranks above every stale id (an id missing from the ranking
    ranks below all; when neither appears, False)."""
    first: bool
    """The top-ranked id is an evidence id."""


def stale_order(
    category: str, ranked: Sequence[str], evidence: Iterable[str], stale: Iterable[str]
) -> Ordered:
    """How a question that carries `stale` ids was ranked (see `Ordered`)."""
    position = {t: i for i, t in enumerate(ranked)}
    missing = len(ranked) + 1
    wanted = set(evidence)
    best_evidence = min((position.get(t, missing) for t in wanted), default=missing)
    best_stale = min((position.get(t, missing) for t in stale), default=missing)
    return Ordered(category, best_evidence < best_stale, bool(ranked) and ranked[0] in wanted)


def summarise_order(rows: Sequence[Ordered]) -> dict[str, dict[str, float]]:
    """Per category (and `overall`): n, the share ranked above stale, the share first."""
    by: dict[str, list[Ordered]] = defaultdict(list)
    for row in rows:
        by[row.category].append(row)
    out: dict[str, dict[str, float]] = {}
    for category, items in [*sorted(by.items()), ("overall", list(rows))]:
        if items:
            n = len(items)
            out[category] = {
                "n": float(n),
                "above_stale": sum(r.above for r in items) / n,
                "first": sum(r.first for r in items) / n,
            }
    return out
