"""What each sentence shape of the fact heuristic reads from a match (`tasks.facts.patterns`).

A builder takes the regular-expression match of one rule on one clause and returns `Hit`s: the
kind, attribute and value a fact states, what it replaces or ends. Pure functions over the
match and the turn (`Said`); the word lists are `tasks.facts.lexicon`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory.schema import USER_SUBJECT, FactKind
from tasks.facts import lexicon as lex
from tasks.facts.text import activity_of, attribute_key, attribute_of, clean_value
from tasks.keywords import _NOT_NAMES

K = FactKind


@dataclass(frozen=True, slots=True)
class Said:
    """One turn as the heuristic reads it."""

    text: str
    """What the speaker said (without a `Name:` label)."""
    subject: str
    """Who "I" is: `USER_SUBJECT` in a conversation with the assistant, else the speaker."""
    when: datetime
    previous: str = ""
    """The turn just before in the thread (the question a "yes" answers)."""
    agent: bool = True
    """A conversation with the assistant (standing instructions are possible)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """What a rule read from a clause before it is rendered."""

    kind: FactKind
    attribute: str
    value: str = ""
    subject: str | None = None
    """None: the clause's subject (`fact_patterns.subject_of`)."""
    ends: bool = False
    replaces: str = ""
    confidence: float = 0.8
    text: str | None = None
    """A proposition of its own (None: the clause, rendered)."""


Builder = Callable[[re.Match[str], Said], list[Hit]]


def is_name(text: str | None) -> bool:
    """True for a capitalised word that is not a sentence opener ("Hana", not "This", "I've")."""
    if not text:
        return False
    first = text.split()[0]
    return first.split("'")[0] not in _NOT_NAMES and first[:1].isupper()


def _group(m: re.Match[str], *names: str) -> str:
    found = m.groupdict()
    return next((found[n] for n in names if found.get(n)), "") or ""


def home(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I live in Lyon", "we moved to Porto", "home is a flat in Leeds"."""
    return [Hit(K.ATTRIBUTE, "home", _group(m, "v"))]


def origin(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm from Lisbon"."""
    return [Hit(K.ATTRIBUTE, "origin", _group(m, "v"))]


def work(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I work at Acme", "I joined Globex", "I got hired as a developer at Stripe" (a role
    too)."""
    hits = [Hit(K.ATTRIBUTE, "work", clean_value(_group(m, "v")))]
    title = _group(m, "role", "role2", "role3", "role4")
    if title:
        hits.append(Hit(K.ATTRIBUTE, "role", title.strip()))
    return hits


def work_ends(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I quit my job", "I got laid off", "I retired"."""
    return [Hit(K.EVENT, "work", ends=True)]


def role(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm a nurse" (and, with "at St Mary's", the workplace too)."""
    hits = [Hit(K.ATTRIBUTE, "role", _group(m, "v").strip())]
    place = _group(m, "org")
    if place:
        hits.append(Hit(K.ATTRIBUTE, "work", clean_value(place)))
    return hits


def name(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My name is Nora", "Hi, I'm Nora."."""
    value = _group(m, "v")
    return [Hit(K.ATTRIBUTE, "name", value)] if is_name(value) else []


def age(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm 34 years old", "I turned 40"."""
    return [Hit(K.ATTRIBUTE, "age", _group(m, "v", "v2"))]


def relation_named(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My sister Claire", "my boss, Gary,", "my manager is Karen"."""
    person = _group(m, "n")
    if not is_name(person):
        return []
    rel = _group(m, "rel").lower()
    owner = "The user" if said.subject == USER_SUBJECT else said.subject
    attribute = "partner" if rel in lex.PARTNER else rel
    return [Hit(K.RELATIONSHIP, attribute, person, text=f"{owner}'s {rel} is {person}.")]


def dating(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm seeing a woman named Sofia", "I met someone, her name is Hana", "X and I got
    engaged"."""
    person = _group(m, "n", "n2")
    return [Hit(K.RELATIONSHIP, "partner", person if is_name(person) else "someone new")]


def breakup(m: re.Match[str], said: Said) -> list[Hit]:
    """ "Tom and I broke up", "I'm single"."""
    return [Hit(K.EVENT, "partner", ends=True)]


def diet(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm vegetarian", "I went fully vegan", "I'm on a keto diet"."""
    return [Hit(K.ATTRIBUTE, "diet", clean_value(_group(m, "v")).lower())]


def favourite(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My favourite band is Radiohead", "Dune is now my favourite film"."""
    thing = attribute_key(_group(m, "thing"))
    thing = lex.FAVOURITE_SYNONYMS.get(thing, thing)
    value = clean_value(_group(m, "v"))
    return [Hit(K.PREFERENCE, f"favourite:{thing}", value)] if thing and value else []


def likes(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I love hiking", "I can't stand jazz" (a flip of the same object replaces it)."""
    key = attribute_key(_group(m, "v"))
    if not key:
        return []
    negative = re.search(r"(?i)\b(hate|dislike|can't stand|don't|do not|no longer|not)\b", m[0])
    return [Hit(K.PREFERENCE, f"likes:{key}", "dislikes" if negative else "likes")]


def pet(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My cat Luna", "we adopted a beagle called Max"."""
    words = _group(m, "animal").lower().split()
    known = [w for w in words if w in lex.ANIMALS]
    animal = (known or words or ["pet"])[-1].rstrip("s")
    person = _group(m, "n")
    return [
        Hit(K.ATTRIBUTE, f"pet:{animal}", person if is_name(person) else animal, confidence=0.75)
    ]


def possession(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I drive an old Golf", "I got a Pixel 8", "just upgraded to an iPhone 15"."""
    thing = clean_value(_group(m, "v"))
    attribute = attribute_of(thing, things=True)
    return [Hit(K.ATTRIBUTE, attribute, thing)] if attribute else []


def replacement(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I sold the Golf and bought a Tesla", "I left nursing and now I teach biology", "we
    cancelled Lisbon and booked Rome": the new value replaces the old one."""
    old, new = clean_value(_group(m, "old")), clean_value(_group(m, "v"))
    verb = _group(m, "verb").lower()
    value = f"{verb} {new}" if verb in ("teach", "work", "study", "studying", "learning") else new
    # The attribute of the new value, else (resolved against the store) that of what it replaces.
    kind = (
        K.PLAN
        if verb in ("booked", "doing", "going", "going to", "visiting", "heading to", "off to")
        else K.ATTRIBUTE
    )
    return [Hit(kind, attribute_of(new) or "", value, replaces=old, confidence=0.75)]


def called_off(m: re.Match[str], said: Said) -> list[Hit]:
    """ "Iceland is off": a plan or thing named at the clause's start no longer holds."""
    old = clean_value(_group(m, "old"))
    return [Hit(K.EVENT, "", ends=True, replaces=old)]


def instead(m: re.Match[str], said: Said) -> list[Hit]:
    """ "New Year in Montreal instead of Mexico City": the first replaces the second."""
    old, new = clean_value(_group(m, "old")), clean_value(_group(m, "v"))
    new = re.sub(r"(?i)^(?:change of plans?|new plan|plan b)\s*", "", new)
    kind = (
        K.PLAN
        if re.search(r"(?i)\b(plan|trip|holiday|vacation|new year|christmas)\b", m.string)
        else K.ATTRIBUTE
    )
    return [Hit(kind, attribute_of(new) or "", new, replaces=old, confidence=0.7)]


def sold(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I sold my car", "gave away the bike": it ends, nothing replaces it."""
    old = clean_value(_group(m, "v"))
    return [Hit(K.EVENT, attribute_of(old, things=True) or "", ends=True, replaces=old)]


def habit(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I go running every morning", "these days I swim ... instead of running"."""
    clause = m.string
    attribute = attribute_of(clause, habits=True)
    if not attribute or not attribute.startswith("habit:"):
        return []
    replaced = re.search(r"(?i)\binstead of (\w+(?:\s\w+)?)", clause)
    rest = re.sub(r"(?i)\binstead of \w+(?:\s\w+)?", "", clause)
    return [
        Hit(
            K.ATTRIBUTE,
            attribute,
            activity_of(rest) or attribute.split(":")[-1],
            replaces=replaced.group(1) if replaced else "",
            confidence=0.75,
        )
    ]


def stopped(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I quit coffee; now it's green tea": replaced; "I gave up smoking": ended."""
    old = clean_value(_group(m, "v"))
    rest = m.string[m.end() :]
    if re.search(r"(?i)\b(?:now|these days|instead)\b", rest) and attribute_of(rest, habits=True):
        value = activity_of(rest) or clean_value(rest)
        return [Hit(K.ATTRIBUTE, attribute_of(rest, habits=True) or "", value, replaces=old)]
    return [Hit(K.EVENT, attribute_of(old, habits=True) or "", ends=True, replaces=old)]


def learning(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I'm learning Spanish", "I'm taking guitar lessons"."""
    thing = clean_value(_group(m, "v"))
    attribute = attribute_of(thing) or f"learning:{attribute_key(thing)}"
    if not attribute.startswith("learning:"):
        attribute = f"learning:{attribute_key(thing)}"
    return [Hit(K.ATTRIBUTE, attribute, thing.split()[0] if thing else thing)]


def switched(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I switched from Spanish to Portuguese", "switched from tea to coffee"."""
    old, new = clean_value(_group(m, "old")), clean_value(_group(m, "v"))
    attribute = attribute_of(new, habits=True) or attribute_of(old, habits=True) or ""
    return [Hit(K.ATTRIBUTE, attribute, new, replaces=old, confidence=0.75)]


def plan(m: re.Match[str], said: Said) -> list[Hit]:
    """ "We're planning a trip to Japan in March", "I'm going to Lisbon in May"."""
    key = attribute_key(_group(m, "v"))
    return [Hit(K.PLAN, f"plan:{key}" if key else "", when_of(m.string))]


def plan_change(m: re.Match[str], said: Said) -> list[Hit]:
    """ "We postponed the Japan trip to October", "we called off the party"."""
    key = attribute_key(_group(m, "what"))
    ends = _group(m, "verb").lower() in ("cancelled", "canceled", "called off", "dropped")
    value = "" if ends else clean_value(_group(m, "v"))
    return [Hit(K.PLAN, f"plan:{key}" if key else "", value, ends=ends)]


def goal(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My goal is to run a marathon", "I want to learn to sail"."""
    key = attribute_key(_group(m, "v"))
    return [Hit(K.GOAL, f"goal:{key}" if key else "", confidence=0.7)]


def decision(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I decided to take a Portuguese class because ..." (its reasons stay in its text)."""
    return [Hit(K.DECISION, "", _group(m, "v").strip())]


def event(m: re.Match[str], said: Said) -> list[Hit]:
    """ "I went to a support group yesterday": something that happened, replacing nothing."""
    return [Hit(K.EVENT, "", confidence=0.65)]


def my_thing(m: re.Match[str], said: Said) -> list[Hit]:
    """ "My knee has been hurting", "my phone is a Galaxy S21": a property of the speaker's."""
    thing = _group(m, "thing").lower()
    if thing.split()[-1] in lex.RELATIONS:
        return []
    value = clean_value(_group(m, "v"))
    if is_judgement(value):  # "my job was tough": how it felt, no value a later one replaces
        return [Hit(K.ATTRIBUTE, "", value, confidence=0.6)]
    attribute = attribute_of(thing) or attribute_key(thing)
    return [Hit(K.ATTRIBUTE, attribute, value, confidence=0.6)]


def is_judgement(value: str) -> bool:
    """True when a value only judges its thing ("tough", "a bummer", "pretty amazing", "the
    best"): `lex.EVALUATIONS` graded by `lex.INTENSIFIERS`, nothing else."""
    words = [w for w in re.findall(r"[a-z]+", value.lower()) if w not in lex.INTENSIFIERS]
    return bool(words) and all(w in lex.EVALUATIONS for w in words)


def when_of(text: str) -> str:
    """The month, season or period a plan names ("March", "summer"), or ""."""
    m = re.search(
        r"(?i)\b(?:in|on|next|this|by|around|for)\s+((?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|"
        r"nov|dec)[a-z]*|spring|summer|autumn|fall|winter|week|month|year|\d{4})\b",
        text,
    )
    return m.group(1) if m else ""
