"""Deterministic text heuristics shared by the fallbacks: keywords, topics, named entities.

Good enough to keep the system useful offline; an LLM does better when one is configured.
"""

from __future__ import annotations

import re
from collections import Counter

from memory.schema import EntityType, topic_slug
from tasks.entity_types import entity_type, named_at_start

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    yes ok okay really actually like get got go going gonna want know think thing things one
    user agent said say says tell told remember please thanks thank hi hello hey well oh yeah
    im i'm it's that's don't didn't can't won't i've i'll you're we're they're much many lot
    today yesterday tomorrow week month year time day days new good great nice""".split()
)

_POSSESSIVE = re.compile(r"'s$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_UPPER = "A-ZÀ-ÖØ-Þ"
_LETTER = "a-zA-ZÀ-ÖØ-öø-ÿ"
_NAME_WORD = rf"[{_UPPER}][{_LETTER}\-']{{1,39}}(?![{_LETTER}\-'])"
_NAME = re.compile(rf"\b({_NAME_WORD}(?:[ \t]+(?:of[ \t]+|de[ \t]+|van[ \t]+)?{_NAME_WORD})*)")
NAME_MAX_WORDS = 5
"""A longer run of capitalised words is a heading or a list, not one name."""
NAME_MAX_CHARS = 100
"""The longest entity name kept (the extraction schema's limit)."""
_TITLE_END = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof)\.\s*$")
_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n\s*|:\s+)$")
_NOT_NAMES = frozenset(
    """I User Agent The A An My Our Your We You It This That These Those Yes No Ok Okay Hi Hello
    Hey Thanks Thank So And But Also Or If Then What When Where Who Why How Do Did Does Is Are Can
    Could Would Should Will Just Oh Well Here There Today Tomorrow Yesterday Monday Tuesday
    Wednesday Thursday Friday Saturday Sunday January February March April May June July August
    September October November December Big News Great Good Nice Sure Maybe Please Sorry Dr Mr
    Mrs Ms Mx Prof""".split()
)


def keywords(text: str, limit: int = 5) -> list[str]:
    """The most frequent content words, longest-first on ties."""
    words = (_POSSESSIVE.sub("", w.lower()).strip("'-") for w in _WORD.findall(text))
    counts = Counter(w for w in words if w not in STOPWORDS)
    ranked = sorted((w for w in counts if len(w) > 3), key=lambda w: (-counts[w], -len(w), w))
    return ranked[:limit]


def topics(text: str, limit: int = 5) -> list[str]:
    """Topic slugs for a text: its top keywords."""
    return [topic_slug(w) for w in keywords(text, limit)]


def entities(text: str, limit: int = 10) -> list[tuple[str, EntityType]]:
    """Capitalised names that do not start a sentence, with a guessed type."""
    found: dict[str, EntityType] = {}
    for match in _NAME.finditer(text):
        words = match.group(1).split()
        dropped = 0
        while words and words[0].split("'")[0] in _NOT_NAMES:  # "I'm Ada" -> "Ada"
            words.pop(0)
            dropped += 1
        name = " ".join(words)
        if len(name) < 2 or "'" in name:
            continue
        if len(words) > NAME_MAX_WORDS or len(name) > NAME_MAX_CHARS:
            continue
        before = text[: match.start()]
        after = text[match.end() : match.end() + 60]
        opener = not dropped and _SENTENCE_START.search(before) and not _TITLE_END.search(before)
        if opener and len(words) == 1 and not named_at_start(after):
            continue  # a capitalised sentence opener, most likely not a name
        kind = entity_type(name, before, after)
        found.setdefault(name, kind)
        if len(found) >= limit:
            break
    return list(found.items())
