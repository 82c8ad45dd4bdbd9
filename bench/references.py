"""Reference retrievers of the memeval protocol: plain BM25, plain dense and their RRF, turn level.

They rank a conversation's turns for each question verbatim, with no memory system around them:
BM25 as rank-bm25's `BM25Okapi` scores (lowercase word tokens, k1 = 1.5, b = 0.75, negative idf
floored at a quarter of the mean idf), dense as the cosine of the configured embedder's vectors of
each turn's text and of the question, RRF as Σ 1 / (60 + rank) of the two. `mneme eval retrieval`
runs them beside mneme so that every category shows the floor the issue sets: mneme must not rank
below the best single retriever by more than noise. Turn vectors are cached (`--store`) by the
file's content and the embedder fingerprint.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.memeval import Conversation
from bench.metrics import Scored, question_metrics, summarise
from memory.embeddings.embedders import Embedder
from memory.retrieval.ranking import rrf_lists

__all__ = ["REFERENCES", "bm25_scores", "reference_metrics"]

REFERENCES = ("BM25", "dense", "RRF")
"""The reference retrievers, in the order the tables show them."""
K1 = 1.5
B = 0.75
EPSILON = 0.25
_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def bm25_scores(docs: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """BM25Okapi scores of every tokenised document for a tokenised query (rank-bm25's formula)."""
    n = len(docs)
    if not n:
        return []
    lengths = [len(d) for d in docs]
    avg = sum(lengths) / n or 1.0
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    idf = {t: math.log(n - c + 0.5) - math.log(c + 0.5) for t, c in df.items()}
    floor = EPSILON * (sum(idf.values()) / len(idf)) if idf else 0.0
    idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}
    counts = [Counter(d) for d in docs]
    out = []
    for tf, length in zip(counts, lengths, strict=True):
        norm = K1 * (1 - B + B * length / avg)
        out.append(
            sum(idf.get(t, 0.0) * tf[t] * (K1 + 1) / (tf[t] + norm) for t in query if t in tf)
        )
    return out


async def _turn_vectors(
    conv: Conversation, texts: list[str], embedder: Embedder, cache: Path | None
) -> np.ndarray:
    key = hashlib.sha256(
        "\x00".join([conv.id, embedder.fingerprint, *texts]).encode("utf-8")
    ).hexdigest()[:16]
    path = cache / f"reference-{key}.npy" if cache is not None else None
    if path is not None and path.is_file():
        cached: np.ndarray = np.load(path)
        return cached
    vectors = np.asarray(await embedder.embed_documents(texts), dtype=np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, vectors)
        partial.replace(path)
    return vectors


async def reference_metrics(
    conversations: Sequence[Conversation], embedder: Embedder, cache: Path | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """Per-category metrics (`bench.metrics.summarise`) of each reference retriever."""
    scored: dict[str, list[Scored]] = {name: [] for name in REFERENCES}
    for conv in conversations:
        turns = [t for s in conv.sessions for t in s["turns"]]
        ids = [str(t["id"]) for t in turns]
        texts = [str(t["text"]) for t in turns]
        docs = [_tokens(t) for t in texts]
        vectors = await _turn_vectors(conv, texts, embedder, cache)
        for q in conv.questions:
            question = str(q["question"])
            lexical = bm25_scores(docs, _tokens(question))
            cosine = vectors @ np.asarray(await embedder.embed_query(question), dtype=np.float32)
            # ties keep conversation order, as a stable sort of the scores does
            bm25 = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -lexical[i])]
            dense = [ids[i] for i in np.argsort(-cosine, kind="stable")]
            fused = rrf_lists([(1.0, bm25), (1.0, dense)], 60)
            rrf = sorted(fused, key=lambda t: -fused[t])
            category = str(q.get("category") or "uncategorised")
            for name, ranked in zip(REFERENCES, (bm25, dense, rrf), strict=True):
                scored[name].append(Scored(category, question_metrics(ranked, q["evidence"])))
    return {name: summarise(rows) for name, rows in scored.items()}


FLOOR_METRICS = ("R@10", "NDCG@10")
"""The metrics the floor is checked on."""


def floor_losses(
    metrics: dict[str, dict[str, float]], references: dict[str, dict[str, dict[str, float]]]
) -> list[tuple[str, str, float, str, float]]:
    """Where mneme is below the best single retriever (BM25 or dense) by more than noise.

    Noise is one question of the category (1 / n): (category, metric, mneme, best retriever,
    its value) for every category and overall figure beyond it.
    """
    out = []
    for category, row in metrics.items():
        n = row.get("n", 0.0)
        if not n:
            continue
        for metric in FLOOR_METRICS:
            singles = [
                (references[name][category][metric], name)
                for name in ("BM25", "dense")
                if category in references.get(name, {})
            ]
            if not singles:
                continue
            best, name = max(singles)
            if row[metric] < best - 1.0 / n - 1e-9:
                out.append((category, metric, row[metric], name, best))
    return out
