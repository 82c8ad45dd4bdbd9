"""The pure rules of knowledge: what a proposition is, its id, how well its source grounds it,
and whether it replaces a stored fact (the offline supersession rule).

No I/O: `memory.knowledge.facts` applies these against the stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import USER_SUBJECT, Fact, FactKind, normalise_text, stable_uid
from memory.text.relations import RELATIONS, SINGLE_RELATIONS
from memory.text.sparse import tokenize

MULTI_VALUED = ("habit:", "pet:", "learning:", "possession:", "likes:")
"""Attribute prefixes a subject can hold several values of at once: a new value replaces an old
one only when the statement says so (or, for `likes:`, when it flips the same object)."""


@dataclass(frozen=True, slots=True)
class Proposition:
    """One fact an episode states, before it meets the store."""

    text: str
    kind: FactKind
    subject: str = USER_SUBJECT
    attribute: str = ""
    value: str = ""
    confidence: float = 0.7
    concepts: tuple[str, ...] = ()
    valid_from: datetime | None = None
    """When it started to hold (None: when it was said)."""
    ends: bool = False
    replaces: str = ""
    grounding: float = 1.0
    supersedes: tuple[str, ...] = ()
    """Fact uids the LLM confirmed this replaces (only those it was shown)."""
    because: tuple[str, ...] = ()
    """Fact uids the LLM named as what led to this."""


def fact_uid(tenant: str, text: str, attribute: str = "", salt: str = "") -> str:
    """The deterministic uid of a fact: uuid5 of the tenant, the normalised text and, when it
    has one, its attribute (one sentence can state two: "I'm a nurse at St Mary's" is a role
    and a workplace)."""
    parts = [normalise_text(text), *([attribute] if attribute else []), *([salt] if salt else [])]
    return stable_uid(tenant, "fact", *parts)


def point_id(tenant: str, uid: str) -> str:
    """The `knowledge` vector point of a fact."""
    return stable_uid(tenant, "fact-point", uid)


def vector_text(fact: Fact | Proposition) -> str:
    """What is embedded for a fact: its text and its concepts."""
    if not fact.concepts:
        return fact.text
    return f"{fact.text} ({', '.join(fact.concepts)})"


def grounding(text: str, source: str, ignore: Sequence[str] = ()) -> float:
    """Share of the proposition's content words found in its source text, 0..1.

    Words of `ignore` (the subject's name, "user") and dates the extraction added are left out.
    """
    skip = set(tokenize(" ".join([*ignore, "user", "assistant", "standing instruction from"])))
    words = [
        w
        for w in tokenize(text)
        if len(w) > 1 and w not in skip and not w.isdigit() and w not in _DATE_WORDS
    ]
    if not words:
        return 1.0
    have = set(tokenize(source))
    return round(sum(w in have for w in words) / len(words), 3)


_DATE_WORDS = frozenset(
    tokenize(
        "january february march april may june july august september october november december "
        "week of"
    )
)


def is_single_valued(attribute: str) -> bool:
    """True when a subject holds one value of the attribute at a time (home, work, diet...)."""
    if not attribute or attribute.startswith(MULTI_VALUED):
        return False
    return attribute not in RELATIONS or attribute in SINGLE_RELATIONS


PARTICLES = frozenset(tokenize("up down out off over away back around along about through in on"))
"""The particles of phrasal verbs: "giving up" names nothing that "curling up with a book"
mentions."""


def mentions(fact: Fact, term: str) -> bool:
    """True when the fact's value or text names `term`: a word of it (or a word sharing its
    first four letters or more, "nursing" and "nurse"), or the same drink family."""
    words = {w for w in tokenize(term) if len(w) > 1 and w not in PARTICLES}
    if not words:
        return False
    have = set(tokenize(f"{fact.value} {fact.text}"))
    if words & have or any(_stem_match(w, h) for w in words for h in have):
        return True
    return bool(_families(term) & _families(f"{fact.value} {fact.text}"))


def _stem_match(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and long.startswith(short)


DRINK_FAMILIES = {
    "soda": frozenset(tokenize("soda coke cola pop lemonade sprite fanta pepsi")),
    "coffee": frozenset(
        tokenize("coffee espresso latte cappuccino americano mocha macchiato cortado flat white")
    ),
    "tea": frozenset(tokenize("tea matcha chai")),
}
"""Drinks by family (sparse tokens): quitting coffee ends a habit of espressos."""


def _families(text: str) -> set[str]:
    words = set(tokenize(text))
    return {name for name, members in DRINK_FAMILIES.items() if words & members}


def conflicts(new: Proposition, old: Fact) -> bool:
    """The offline rule: does `new` replace or end `old` (same subject and attribute)?

    An ending ends a state, never another ending: "since I lost my job, things have been
    tough" does not end "I lost my job at Door Dash" (a new job does: it replaces the state the
    loss left)."""
    if normalise_text(new.subject) != normalise_text(old.subject):
        return False
    if new.ends and old.kind == FactKind.EVENT:
        return False
    if new.replaces and old.attribute and mentions(old, new.replaces):
        same_family = new.attribute.split(":")[0] == old.attribute.split(":")[0]
        return not new.attribute or new.attribute == old.attribute or same_family
    if not new.attribute or new.attribute != old.attribute:
        return False
    if new.ends:
        return not new.replaces or mentions(old, new.replaces)
    if not is_single_valued(new.attribute):
        return new.attribute.startswith("likes:") and new.value != old.value
    return normalise_text(new.value) != normalise_text(old.value)


def same_value(new: Proposition, old: Fact) -> bool:
    """True when both state the same value of the same attribute (or either has none)."""
    if not new.attribute or not old.attribute:
        return True
    return new.attribute == old.attribute and normalise_text(new.value) == normalise_text(old.value)
