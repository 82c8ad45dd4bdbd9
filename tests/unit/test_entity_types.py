"""Offline entity typing on thirty varied sentences written for this test (not taken from any
benchmark): people, pets, organisations, places and events told apart by ordinary English cues.
The issue's bar is 25 of 30; every miss is printed."""

from __future__ import annotations

from memory.schema import EntityType
from tasks.keywords import entities

P, PET, ORG, PLACE = EntityType.PERSON, EntityType.PET, EntityType.ORGANIZATION, EntityType.PLACE

CASES: list[tuple[str, dict[str, EntityType]]] = [
    ("I had lunch with Priya yesterday.", {"Priya": P}),
    ("My cat Miso knocked over a glass again.", {"Miso": PET}),
    ("We adopted a puppy named Biscuit last week.", {"Biscuit": PET}),
    ("I just started at Stripe as a designer.", {"Stripe": ORG}),
    ("She flew to Lisbon for the weekend.", {"Lisbon": PLACE}),
    ("My brother Tomás lives in Valencia.", {"Tomás": P, "Valencia": PLACE}),
    ("The interview at Deloitte went well.", {"Deloitte": ORG}),
    ("Our dog Rex hates the vacuum.", {"Rex": PET}),
    ("I met Daniel and Sofia at the conference.", {"Daniel": P, "Sofia": P}),
    ("We're thinking about moving to Canada next year.", {"Canada": PLACE}),
    ("I work for the Red Cross now.", {"Red Cross": ORG}),
    ("Mia, my daughter, starts school in September.", {"Mia": P}),
    ("My parrot Kiwi says hello to everyone.", {"Kiwi": PET}),
    ("I got an offer from Shopify!", {"Shopify": ORG}),
    ("We spent a week in Kyoto in April.", {"Kyoto": PLACE}),
    ("My friend Jordan recommended the book.", {"Jordan": P}),
    ("I'm volunteering at the Oakland Food Bank.", {"Oakland Food Bank": ORG}),
    ("Luna, our kitten, is finally eating.", {"Luna": PET}),
    ("I drove up to Lake Tahoe with friends.", {"Lake Tahoe": PLACE}),
    ("Dr. Patel said my knee needs rest.", {"Patel": P}),
    ("We launched our app with Acme Labs.", {"Acme Labs": ORG}),
    ("I'm flying to New York on Friday.", {"New York": PLACE}),
    ("My sister Maya got engaged.", {"Maya": P}),
    ("Our hamster Peanut escaped last night.", {"Peanut": PET}),
    ("I joined a startup called Loomly in March.", {"Loomly": ORG}),
    ("Grandma lives near Dublin.", {"Dublin": PLACE}),
    ("I've been learning guitar from Marcus.", {"Marcus": P}),
    ("Bella, my golden retriever, loves the beach.", {"Bella": PET}),
    ("I had a call with the team at Microsoft.", {"Microsoft": ORG}),
    ("Anna and I hiked Mount Rainier.", {"Anna": P, "Mount Rainier": PLACE}),
]


def test_at_least_25_of_30_sentences_are_typed_right() -> None:
    right, misses = 0, []
    for text, expected in CASES:
        found = dict(entities(text))
        if all(found.get(name) == kind for name, kind in expected.items()):
            right += 1
        else:
            misses.append(f"{text!r}: expected {expected}, found {found}")
    print(f"{right}/{len(CASES)} right", *misses, sep="\n")
    assert len(CASES) == 30
    assert right >= 25, "\n".join(misses)
