"""The sparse lexical encoder: BM25-style term weights for Qdrant's sparse vectors.

Documents carry the BM25 term-frequency part; the IDF part is computed by Qdrant itself from the
collection (`Modifier.IDF` on the sparse vector config), so a query vector holds 1 per unique
token and the dot product Qdrant computes is the BM25 score

    score(q, d) = Σ_{t ∈ q ∩ d} idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d| / avg_len))

with k1 = 1.2, b = 0.75 and a fixed `AVG_DOC_LEN` (the encoder never sees the corpus).

The tokeniser is deterministic across processes and machines: NFKC + casefold, Unicode word
tokens (letters and digits; underscores split), each CJK character its own token, a small English
stopword list, and Porter's step 1 (plural and -ed/-ing suffixes) on ASCII words. Token ids are a
stable 32-bit blake2b hash (never Python's salted `hash`); tokens whose ids collide are counted
as one term. Changing any of this changes every stored vector: bump `SPARSE_VERSION` and re-index.

This module is pure computation: no I/O, no model, no store.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from memory.stores.base import SparseVector

SPARSE_VERSION = 1
"""Version of the tokeniser and weighting; stored vectors are only comparable within a version."""

K1 = 1.2
"""BM25 term-frequency saturation."""
B = 0.75
"""BM25 length normalisation."""
AVG_DOC_LEN = 24.0
"""Assumed average document length in tokens (after stopwords). Derivatives are one to three
sentences of a conversation turn, which come to about 15-30 content tokens; a constant keeps a
document's vector independent of the rest of the corpus, so upserts stay idempotent."""

MAX_TOKEN_CHARS = 64
"""Longer runs (base64 blobs, hashes) are cut: they never match a typed query anyway."""

STOPWORDS = frozenset(
    """
    a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself me my of on or our ours
    she so than that the their theirs them then there these they this those to too us was we
    were what when where which while who whom why will with would you your yours
    """.split()
)
"""Function words that carry no lexical signal. Negations ("not", "no") are kept on purpose."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_VOWELS = frozenset("aeiou")


def token_id(token: str) -> int:
    """The stable 32-bit id of a token (blake2b, big-endian)."""
    digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def tokenize(text: str) -> list[str]:
    """Split text into normalised, stemmed content tokens, in order (stopwords dropped)."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    for match in _TOKEN.finditer(normal):
        word = match.group()[:MAX_TOKEN_CHARS]
        if word in STOPWORDS:
            continue
        tokens.append(stem(word))
    return tokens


def token_set(text: str) -> frozenset[str]:
    """The distinct tokens of `tokenize(text)`: the same set, stemming each distinct word once."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    words = {w[:MAX_TOKEN_CHARS] for w in _TOKEN.findall(normal)}
    return frozenset(stem(w) for w in words if w not in STOPWORDS)


def encode_document(text: str) -> SparseVector:
    """The document-side vector: BM25 tf saturation per term (IDF is applied by Qdrant)."""
    counts = _count_ids(tokenize(text))
    length = sum(counts.values())
    if not length:
        return SparseVector(indices=(), values=())
    norm = K1 * (1.0 - B + B * length / AVG_DOC_LEN)
    indices = tuple(sorted(counts))
    values = tuple(counts[i] * (K1 + 1.0) / (counts[i] + norm) for i in indices)
    return SparseVector(indices=indices, values=values)


def encode_query(text: str) -> SparseVector:
    """The query-side vector: 1 per unique term, so the dot product is Σ idf · tf-weight."""
    indices = tuple(sorted(_count_ids(tokenize(text))))
    return SparseVector(indices=indices, values=(1.0,) * len(indices))


def _count_ids(tokens: Iterable[str]) -> Counter[int]:
    # Counting by id (not by token) merges hash collisions into one term.
    return Counter(token_id(t) for t in tokens)


# --------------------------------------------------------------------------- stemming


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Porter's step 1 (1a plurals, 1b -ed/-ing, 1c y→i) for ASCII words; others unchanged."""
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    word = _step1a(word)
    word = _step1b(word)
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-2]
    if word.endswith("ss"):
        return word
    if word.endswith("s"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return _tidy(word[: -len(suffix)])
    return word


def _tidy(stem_: str) -> str:
    # After removing -ed/-ing: restore the e of "hoping", undouble "running", keep "hissing".
    if stem_.endswith(("at", "bl", "iz")):
        return stem_ + "e"
    if len(stem_) >= 2 and stem_[-1] == stem_[-2] and _is_consonant(stem_, len(stem_) - 1):
        return stem_ if stem_[-1] in "lsz" else stem_[:-1]
    if _measure(stem_) == 1 and _ends_cvc(stem_):
        return stem_ + "e"
    return stem_


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _has_vowel(word: str) -> bool:
    return any(not _is_consonant(word, i) for i in range(len(word)))


def _measure(word: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in the word."""
    pattern = "".join("c" if _is_consonant(word, i) else "v" for i in range(len(word)))
    return len(re.findall(r"v+c+", pattern))


def _ends_cvc(word: str) -> bool:
    if len(word) < 3:
        return False
    return (
        _is_consonant(word, len(word) - 3)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )
