"""Real MiniLM embeddings of the bundled benchmark conversations, cached as .npy under /tmp.

The recall check of `bench/vectors.py` needs realistic vectors (random ones are spread evenly and
make approximate search look better or worse than it is on text). The texts are the sentences of
every turn of the memeval files (`memory.text.chunking.split_sentences`, deduplicated, at least 20
characters), in file order; the queries are the files' questions. Embedding ~100k texts takes
about 15 minutes on 2 cores, so the matrix is kept under `CACHE_DIR` keyed by the texts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memory.embeddings.embedders import build_embedder
from memory.embeddings.install import preflight
from memory.settings import load_settings
from memory.text.chunking import split_sentences

BENCH_DIR = Path(
    os.environ.get("MNEME_BENCH_DIR") or Path(__file__).resolve().parents[2] / "shared" / "bench"
)
"""The memeval files: `../shared/bench` beside the checkout, or MNEME_BENCH_DIR."""
FILES = ("longmemeval_s_dev30.memeval.jsonl", "locomo10.memeval.jsonl")
CACHE_DIR = Path("/tmp/mneme-bench")
MIN_CHARS = 20
BATCH = 256


def corpus_texts(limit: int, bench_dir: Path = BENCH_DIR) -> tuple[list[str], list[str]]:
    """Up to `limit` distinct turn sentences and every question, in file order."""
    seen: set[str] = set()
    texts: list[str] = []
    questions: list[str] = []
    for name in FILES:
        with (bench_dir / name).open(encoding="utf-8") as fh:
            for line in fh:
                conv = json.loads(line)
                questions += [q["question"] for q in conv.get("questions", [])]
                for session in conv["sessions"]:
                    for turn in session["turns"]:
                        for sentence in split_sentences(turn["text"]):
                            if len(sentence) >= MIN_CHARS and sentence not in seen:
                                seen.add(sentence)
                                texts.append(sentence)
    return texts[:limit], questions


def _key(texts: list[str], fingerprint: str) -> str:
    digest = hashlib.sha256(fingerprint.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


async def embed_cached(
    texts: list[str], *, progress: bool = True
) -> tuple[npt.NDArray[np.float32], str]:
    """The (n, dim) embeddings of `texts` by the configured embedder, from the cache if there."""
    embedder = build_embedder(load_settings())
    preflight(embedder)  # a missing model: one line with the fix, before any work
    try:
        path = (
            CACHE_DIR
            / f"{embedder.fingerprint}-{len(texts)}-{_key(texts, embedder.fingerprint)}.npy"
        )
        cached = _load(path)
        if cached is not None:
            return cached, embedder.fingerprint
        parts: list[npt.NDArray[np.float32]] = []
        started = time.monotonic()
        for start in range(0, len(texts), BATCH):
            parts.append(await embedder.embed_documents(texts[start : start + BATCH]))
            done = start + len(parts[-1])
            if progress and (done // BATCH) % 20 == 0:
                rate = done / (time.monotonic() - started)
                print(f"embedded {done}/{len(texts)} ({rate:.0f} texts/s)", flush=True)
        matrix = np.concatenate(parts).astype(np.float32)
        _save(path, matrix)
        return matrix, embedder.fingerprint
    finally:
        await embedder.close()


def _load(path: Path) -> npt.NDArray[np.float32] | None:
    return np.load(path) if path.exists() else None


def _save(path: Path, matrix: npt.NDArray[np.float32]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, matrix)
    tmp.rename(path)


if __name__ == "__main__":
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    texts, questions = corpus_texts(n)
    print(f"{len(texts)} texts, {len(questions)} questions", flush=True)
    asyncio.run(embed_cached(questions))
    matrix, fp = asyncio.run(embed_cached(texts))
    print(matrix.shape, fp)
