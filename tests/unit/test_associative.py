"""The associative path's name lookup: which word runs of a query are looked up as entity keys."""

from __future__ import annotations

from memory.retrieval.associative import entities_in, name_candidates
from memory.schema import Entity, EntityType, entity_key


def test_candidates_cover_multi_word_and_punctuated_names() -> None:
    keys = set(name_candidates("Did Jean-Luc visit New York's Central Park, or St. Mary's?"))
    for name in ("Jean-Luc", "New York", "Central Park", "new york central park", "St. Mary"):
        assert entity_key(name) in keys, name
    assert len(max(keys, key=lambda k: len(k.split())).split()) <= 5


def test_lookup_then_match_keeps_whole_words_longest_first() -> None:
    known = [Entity(tenant="t", name=n, type=EntityType.PLACE) for n in ("New York", "York", "Ork")]
    query = "What did I do in New York?"
    looked_up = [e for e in known if entity_key(e.name) in set(name_candidates(query))]
    assert [e.name for e in looked_up] == ["New York", "York"]  # "Ork" is not a word here
    assert [e.name for e in entities_in(query, looked_up)] == ["New York"]
