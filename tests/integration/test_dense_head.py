"""A turn that answers in other words than the question's keeps a place beside the lexical
list's best, on every graph backend (real stores, the real embedder, the offline write path):
"Did I ever get that sailing certificate?" shares a word with every turn about sailing and
none with the turn that answers it (issue 31, docs/adr/0156-dense-head-place.md)."""

from __future__ import annotations

from datetime import timedelta

from memory.retrieval.recipes import SIMPLE, ablate
from memory.retrieval.retrieve import retrieve
from memory.services import Services
from tests.integration.test_consolidation import T0, tell

STORY = [
    (0, "Two goals for this year: read thirty books, and get my CWO sailing certificate."),
    (3, "My nephew built a tiny sailing boat out of a milk carton."),
    (8, "Made lasagne for the whole floor, far too much of it."),
    (12, "The bar at the sailing club does the best chips in town."),
    (15, "My sister visits next weekend, she wants to see the tulips."),
    (20, "Saw an exhibition about old sailing ships at the museum."),
    (26, "Guess who is a certified sailor now? Passed the practical this morning in a force 4."),
    (30, "Bought a new laptop bag for the commute."),
]
NOW = T0 + timedelta(days=40)
QUESTION = "Did I ever get that sailing certificate?"


def place_of(found: list, uid: str) -> int:  # type: ignore[type-arg]
    return next(i for i, c in enumerate(found) if uid in c.sources)


async def test_the_answer_in_other_words_follows_the_lexical_best(services: Services) -> None:
    told = await tell(services, "dh", STORY)
    answer, goal = told[6], told[0]
    without = await retrieve(services, "dh", QUESTION, ablate(SIMPLE, "densehead"), NOW)
    found = await retrieve(services, "dh", QUESTION, SIMPLE, NOW)
    # the fusion alone ranks it below turns that share the word "sailing" and are further
    # from the question in meaning (the museum's ships, the nephew's milk-carton boat)
    similar = {c.episode_uid: c.similarity or 0.0 for c in without}
    below = [told[5], told[1]]
    assert all(similar[s] < similar[answer] for s in below)
    assert all(place_of(without, s) < place_of(without, answer) for s in below)
    # with the step it comes right after the lexical list's best (the goal, which holds both
    # of the question's words), and nothing left the list
    assert place_of(found, answer) == place_of(found, goal) + 1
    assert sorted(c.uid for c in found) == sorted(c.uid for c in without)
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


async def test_a_question_the_lexical_list_answers_is_left_as_it_is(services: Services) -> None:
    await tell(services, "dh", STORY)
    question = "What did I make for the whole floor?"  # the words of the turn that answers
    off = ablate(SIMPLE, "densehead")
    assert [c.uid for c in await retrieve(services, "dh", question, SIMPLE, NOW)][:3] == [
        c.uid for c in await retrieve(services, "dh", question, off, NOW)
    ][:3]
