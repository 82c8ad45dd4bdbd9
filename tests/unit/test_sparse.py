"""The sparse lexical encoder: deterministic tokens and ids, BM25 tf weights, hostile input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memory.text.sparse import (
    AVG_DOC_LEN,
    K1,
    B,
    encode_document,
    encode_query,
    stem,
    token_id,
    tokenize,
)

ROOT = Path(__file__).resolve().parents[2]


def test_tokens_are_casefolded_normalised_words_without_stopwords() -> None:
    assert tokenize("The Straße is NOT closed") == tokenize("the STRASSE is not closed")
    assert tokenize("ＦＵＬＬＷＩＤＴＨ") == ["fullwidth"]  # NFKC
    assert tokenize("The cat and the hat") == ["cat", "hat"]
    assert "not" in tokenize("I do not like it")  # negations carry meaning


def test_numbers_are_kept_and_underscores_split() -> None:
    assert tokenize("Room 101 in 2024, pi=3.14") == ["room", "101", "2024", "pi", "3", "14"]
    assert tokenize("snake_case_name") == ["snake", "case", "name"]


def test_non_latin_scripts_tokenise() -> None:
    assert tokenize("Привет, мир") == ["привет", "мир"]
    assert tokenize("東京都に住む") == [
        "東",
        "京",
        "都",
        "に",
        "住",
        "む",
    ]  # one token per CJK char


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("running", "run"),
        ("runs", "run"),
        ("hoping", "hope"),
        ("hopes", "hope"),
        ("studies", "studi"),
        ("study", "studi"),
        ("caresses", "caress"),
        ("agreed", "agree"),
        ("hissing", "hiss"),
        ("sing", "sing"),
        ("x2", "x2"),
        ("über", "über"),
    ],
)
def test_light_stemming_conflates_inflections(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_token_ids_are_stable_32_bit_hashes_not_pythons_salted_hash() -> None:
    assert token_id("hello") == 0xEA6706F7
    assert 0 <= token_id("anything at all") < 2**32
    code = "from memory.text.sparse import token_id; print(token_id('hello'))"
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert int(out.stdout) == token_id("hello")


def test_document_values_are_bm25_tf_saturation() -> None:
    vec = encode_document("apple")
    norm = K1 * (1 - B + B * 1 / AVG_DOC_LEN)
    assert vec.indices == (token_id("apple"),)
    assert vec.values[0] == pytest.approx((K1 + 1) / (1 + norm))

    vec2 = encode_document("apple apple pear")
    weights = dict(zip(vec2.indices, vec2.values, strict=True))
    assert weights[token_id("apple")] > weights[token_id("pear")]  # tf 2 > tf 1
    assert weights[token_id("apple")] < 2 * weights[token_id("pear")]  # ...but saturating

    short = _weights("apple pear")
    long = _weights("apple pear " + " ".join(f"word{i}" for i in range(60)))
    assert long[token_id("apple")] < short[token_id("apple")]  # longer documents weigh less


def _weights(text: str) -> dict[int, float]:
    vec = encode_document(text)
    return dict(zip(vec.indices, vec.values, strict=True))


def test_indices_are_sorted_and_unique() -> None:
    vec = encode_document("zebra apple mango apple zebra kiwi " * 5)
    assert list(vec.indices) == sorted(set(vec.indices))
    assert len(vec.indices) == len(vec.values) == 4
    assert all(v > 0 for v in vec.values)


def test_hash_collisions_merge_into_one_term() -> None:
    # A real blake2b-32 collision, found by brute force: both tokens count as one term.
    assert token_id("w52890") == token_id("w55286")
    vec = encode_document("w52890 w55286")
    assert vec == encode_document("w52890 w52890")
    assert len(vec.indices) == 1
    assert encode_query("w52890 w55286").values == (1.0,)


def test_query_has_one_per_unique_term() -> None:
    vec = encode_query("dogs dog DOG cat")
    assert vec.indices == tuple(sorted({token_id("dog"), token_id("cat")}))
    assert vec.values == (1.0, 1.0)


@pytest.mark.parametrize("text", ["", "   ", "the of and a", "!!! ... ???"])
def test_empty_or_stopword_only_text_gives_an_empty_vector(text: str) -> None:
    assert encode_document(text).indices == ()
    assert encode_query(text).values == ()


def test_hostile_text_encodes() -> None:
    text = "it's \"quoted\" `tick` }) DETACH DELETE n // \x00\x01\x1b \ud800 lone ' OR 1=1 --"
    vec = encode_document(text)
    assert token_id("detach") in vec.indices and token_id("lone") in vec.indices
    assert encode_query(text).indices


def test_a_megabyte_of_text_encodes() -> None:
    text = "memory consolidation happens during sleep " * 25_000  # ~1 MB
    vec = encode_document(text)
    assert len(vec.indices) == 5  # memory, consolidation, happen, during, sleep
