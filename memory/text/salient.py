"""What a sentence of a turn is worth keeping, offline: the sentence scoring of the compressed
thread (`memory.write.compression`). Emotion, decisions, named entities, novelty and identity
statements are kept; greetings, repetition and the agent's filler are dropped. Pure functions:
no I/O, no model.
"""

from __future__ import annotations

import re

from memory.text.sparse import token_set

SCORE_CHARS = 20_000
"""How much of one side of a turn is scored; the rest is cut with a marker, never carried on."""


_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"[A-Za-zÀ-ÿ'’]+|\d[\d.,:/-]*")

FILLER = frozenset(
    """
    hi hello hey hiya yo morning afternoon evening night good bye goodbye cheers thanks thank
    thx ok okay k sure yes yeah yep yup no nope cool nice great awesome lovely wow oh ah um uh
    hmm haha lol lmao right alright well see soon later talk chat welcome glad please sorry
    noted got it sounds tell more anything else help today just really so much bit
    """.split()
)
"""Words of greetings, acknowledgements and small talk: a sentence of little else is filler."""

AGENT_FILLER = re.compile(
    r"^(noted|got it|thanks[^.]*remember|i('ll| will) remember|that sounds|sounds (great|good|"
    r"lovely|fun|nice)|how (can|may) i help|tell me more|is there anything|what else|i('m| am) "
    r"(here|glad|happy) to|here is what i remember|i don't remember|good (morning|afternoon|"
    r"evening)|hello|hi\b|you're welcome|of course|absolutely|i see|i understand)",
    re.IGNORECASE,
)
"""How the agent's own filler begins."""

EMOTION = frozenset(
    """
    love loved loving hate hated afraid scared fear feared terrified worried worry worries
    anxious anxiety nervous excited thrilled happy happier glad sad sadness upset angry
    furious mad frustrated frustrating lonely proud ashamed grateful heartbroken devastated miss
    missed missing stressed stress overwhelmed relieved cried cry crying tears joy grief grieving
    depressed hurt embarrassed jealous hopeful disappointed guilty panic panicked thankful
    """.split()
)
DECISION = re.compile(
    r"\b(decided|decide|decision|going to|gonna|plan(ning|ned)? to|will|i'll|we'll|let's|chose|"
    r"choose|agreed|promise[ds]?|commit(ted)?|booked|signed|quit|resign(ed)?|from now on|"
    r"never again|accepted|rejected|bought|sold|move (out|in|to)|moving|moved|must|have to)\b",
    re.IGNORECASE,
)
IDENTITY = re.compile(
    r"\b((i am|i'm) (a|an|from|\d+|married|single|divorced|vegan|vegetarian|retired|pregnant)|"
    r"my name|call me|i work|i live|i grew up|i was born|i've always|i never|i believe|"
    r"i value|i care about|allergic|my (wife|husband|partner|son|daughter|kids?|children|"
    r"mother|mom|mum|father|dad|sister|brother|family|friend|boss|dog|cat|job|birthday)|"
    r"i have (a|an|two|three|\d))\b",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset("I I'm I've I'll I'd Im OK Okay".split())


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} [… {len(text) - limit:,} more characters cut]"


def sentences(text: str) -> list[str]:
    """The sentences of a text (its first `SCORE_CHARS` characters), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE.split(text[:SCORE_CHARS]) if s.strip()]


def names_in(sentence: str) -> int:
    """Named things and numbers in a sentence: capitalised words past its first, and digits."""
    words = _WORD.findall(sentence)
    named = sum(1 for w in words[1:] if w[:1].isupper() and w not in _NOT_NAMES)
    return named + sum(1 for w in words if w[:1].isdigit())


def score(sentence: str, seen: set[str], *, agent: bool = False) -> float:
    """How worth keeping a sentence is, given the content words already kept (`seen`).

    Filler (a sentence of greeting and acknowledgement words, or the agent's stock phrases) and
    questions the agent asks score 0. Otherwise: a base for content, plus emotion, decisions,
    identity statements and named entities, times the sentence's novelty against `seen`.
    """
    words = [w.lower().strip("'’") for w in _WORD.findall(sentence)]
    content = [w for w in words if w not in FILLER and len(w) > 2]
    if len(content) < 2:
        return 0.0
    if agent and (AGENT_FILLER.match(sentence) or sentence.rstrip().endswith("?")):
        return 0.0
    terms = token_set(sentence)
    novelty = len(terms - seen) / len(terms) if terms else 0.0
    value = 0.3 + min(len(content), 12) / 24
    if any(w in EMOTION for w in words):
        value += 0.7
    if DECISION.search(sentence):
        value += 0.6
    if IDENTITY.search(sentence):
        value += 0.7
    value += min(names_in(sentence), 3) * 0.3
    value *= 0.2 + 0.8 * novelty
    return value * (0.6 if agent else 1.0)
