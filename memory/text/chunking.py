"""The deterministic splitter: an episode's turns into derivative chunks.

Used when no LLM chunker is configured (offline mode) and as its fallback. Same input, same
chunks, always: chunk ids are derived from their position, so re-indexing is idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TARGET_WORDS = 80
"""Sentences are packed into chunks of about this many words (MiniLM reads ~256 word pieces)."""

MAX_CHUNKS = 64
"""An episode never yields more chunks than this; longer texts get longer chunks (the sparse
vector still covers every word; the dense one sees the start of each chunk)."""

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n{2,}|\n(?=\s*[-*•\d])")


@dataclass(frozen=True, slots=True)
class Derivative:
    """A searchable fragment of an episode, with the questions it is expected to answer."""

    text: str
    questions: tuple[str, ...] = ()
    role: str = "chunk"
    """Which side of the turn it comes from: `user`, `agent`, or `chunk` (LLM-made, mixed)."""


def split_sentences(text: str) -> list[str]:
    """Split text at sentence ends and paragraph breaks, keeping every character but whitespace."""
    parts = (p.strip() for p in _SENTENCE_END.split(text))
    return [p for p in parts if p]


def _pack(sentences: list[str], target_words: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for sentence in sentences:
        n = len(sentence.split())
        if current and words + n > target_words:
            chunks.append(" ".join(current))
            current, words = [], 0
        current.append(sentence)
        words += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def split_text(
    text: str, *, target_words: int = TARGET_WORDS, max_chunks: int = MAX_CHUNKS
) -> list[str]:
    """Split one text into chunks of whole sentences, at most `max_chunks` of them."""
    sentences = split_sentences(text)
    if not sentences:
        return []
    total = sum(len(s.split()) for s in sentences)
    target = max(target_words, -(-total // max_chunks))
    chunks = _pack(sentences, target)
    while len(chunks) > max_chunks:  # a few huge sentences: merge neighbours pairwise
        chunks = [" ".join(chunks[i : i + 2]) for i in range(0, len(chunks), 2)]
    return chunks


def split_turn(user_text: str, agent_text: str) -> list[Derivative]:
    """The default derivatives of an episode: the user's side, then the agent's, in chunks."""
    half = MAX_CHUNKS // 2
    out = [Derivative(text=c, role="user") for c in split_text(user_text, max_chunks=half)]
    out += [Derivative(text=c, role="agent") for c in split_text(agent_text, max_chunks=half)]
    return out
