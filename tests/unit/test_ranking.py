"""Query-term coverage (the non-LLM rerank) finds exactly the tokens the sparse tokeniser makes."""

from __future__ import annotations

import random

from memory.retrieval.ranking import best_coverage, coverage
from memory.text.sparse import token_set, tokenize

TEXTS = (
    "I was hoping the happy ponies agreed; running late, we hopped on the 5000 bus.",
    "SIAC_GEE and Sen2Cor correct Sentinel-2 images (atmospheric correction), naïve café ﬁles.",
    "東京で寿司を食べた. Ça va? I've had Luna for 9 months; she's been studying my keyboard.",
    "Hoping for rain: the hop farm hopes so. Flies, fly, flying, flied. Studies, studied.",
)


def test_coverage_counts_the_query_tokens_that_tokenising_the_text_would_give() -> None:
    rng = random.Random(5)
    vocab = sorted({t for text in TEXTS for t in tokenize(text)} | {"hop", "fli", "stud", "x"})
    for _ in range(400):
        text = rng.choice(TEXTS)
        query = set(rng.sample(vocab, rng.randint(1, 6)))
        assert coverage(query, text) == len(query & token_set(text)) / len(query)
    assert coverage(set(tokenize("Where does Luna sleep?")), TEXTS[2]) == 0.5
    assert coverage(set(), TEXTS[0]) == 0.0


def test_a_text_is_covered_as_well_as_the_sub_query_it_covers_best() -> None:
    dog, job = set(tokenize("what is my dog called?")), set(tokenize("where do I work?"))
    text = "My dog is called Rex."
    assert best_coverage([dog, job], text) == coverage(dog, text) == 1.0
    assert best_coverage([dog, job], text) > coverage(dog | job, text)
    assert best_coverage([job], text) == coverage(job, text)
    assert best_coverage([set(), set()], text) == 0.0 == best_coverage([], text)
