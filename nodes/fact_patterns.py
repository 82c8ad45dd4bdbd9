"""The offline fact heuristic: first-person statements of a turn as typed propositions.

It reads what a speaker says about themselves and the people around them: identity, home, work,
relationships, possessions, preferences, habits, plans, goals, decisions, events and, in a
conversation with the assistant, standing instructions. Each clause is matched against general
English sentence shapes (`RULES`) built from the word lists of `nodes.fact_lexicon`; a match
becomes an `ExtractedFact` with its subject, attribute and value (what a later statement can
replace), rewritten in the third person with absolute dates (`render`). A short "yes, since
May" is read as the confirmation of the question before it (`confirmations`). Nothing here
knows any data set; it answers the schema of the extraction call when no LLM is configured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from memory.chunking import split_sentences
from memory.schema import USER_SUBJECT, FactKind
from nodes import fact_lexicon as lex
from nodes.extract import ExtractedFact
from nodes.fact_text import (
    activity_of,
    attribute_key,
    category_of,
    concepts_for,
    confirmations,
    render,
    since_date,
)
from nodes.keywords import _NOT_NAMES

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
    """None: the speaker."""
    ends: bool = False
    replaces: str = ""
    confidence: float = 0.8
    text: str | None = None
    """A proposition of its own (None: the clause, rendered)."""


Builder = Callable[[re.Match[str], Said], list[Hit]]

_ADV = r"(?:\s+(?i:" + "|".join(sorted(lex.ADVERBS)) + r"))*"
_I = r"(?:\bI\b|\b[Ww]e\b)"
_AUX = r"(?:\s*(?i:'m|'re|'ve|'d|'ll| am| are| have| had| will| would| do| did))?"
_FP = _I + _AUX + _ADV + r"\s+"
_NAME = r"[A-Z][a-zà-ÿ'\-]+(?:\s+[A-Z][a-zà-ÿ'\-]+)?"
_PLACE = r"[A-Z][\w'\-]+(?:[\s\-]+(?:[A-Z][\w'\-]+|de|da|do|del|la|le|sur|upon|on))*"
_ORG = r"[A-Z][\w&'.\-]*(?:\s+(?:&\s+|of\s+)?[A-Z][\w&'.\-]*)*"
_STOP = (
    r"(?=\s+(?i:and|but|because|since|so|which|who|when|while|as|with|at|on|in|for|every|each|"
    r"twice|once|instead|now|these|this|last|next|from|to|until|after|before)\b|[,.;:!?)]|$)"
)
_STOP_PLAN = _STOP.replace("|from|to|", "|from|")
_OBJ = r"(?P<v>[^,.;:!?]{2,60}?)" + _STOP
_REL = "|".join(sorted(lex.RELATIONS, key=len, reverse=True))
_MY_REL = (
    r"\b[Mm]y\s+(?:(?i:new|old|little|big|older|younger|best|ex|ex-|current)\s+)?"
    r"(?P<rel>(?i:" + _REL + r"))"
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _is_name(text: str) -> bool:
    return bool(text) and text.split()[0] not in _NOT_NAMES


def _rel_attribute(rel: str) -> str:
    rel = rel.lower()
    return "partner" if rel in lex.PARTNER else rel


# --------------------------------------------------------------------------- builders


def _home(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "home", m["v"])]


def _origin(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "origin", m["v"])]


def _work(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "work", m["v"])]


def _work_ends(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.EVENT, "work", ends=True)]


def _role(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "role", m["v"].strip())]


def _name(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "name", m["v"])] if _is_name(m["v"]) else []


def _age(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "age", m["v"])]


def _relation_named(m: re.Match[str], said: Said) -> list[Hit]:
    name = m["n"]
    if not _is_name(name):
        return []
    rel = m["rel"].lower()
    owner = "The user" if said.subject == USER_SUBJECT else said.subject
    text = f"{owner}'s {rel} is {name}."
    return [Hit(K.RELATIONSHIP, _rel_attribute(rel), name, text=text)]


def _dating(m: re.Match[str], said: Said) -> list[Hit]:
    groups = m.groupdict()
    name = groups.get("n") or groups.get("n2") or ""
    return [Hit(K.RELATIONSHIP, "partner", name if _is_name(name) else "someone new")]


def _breakup(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.EVENT, "partner", ends=True)]


def _diet(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.ATTRIBUTE, "diet", m["v"].lower())]


def _favourite(m: re.Match[str], said: Said) -> list[Hit]:
    thing = attribute_key(m["thing"])
    return [Hit(K.PREFERENCE, f"favourite:{thing}", m["v"].strip())] if thing else []


def _likes(m: re.Match[str], said: Said) -> list[Hit]:
    obj = m["v"].strip()
    key = attribute_key(obj)
    if not key:
        return []
    negative = bool(
        re.search(r"(?i)\b(hate|dislike|can't stand|don't|do not|no longer|not)\b", m[0])
    )
    return [Hit(K.PREFERENCE, f"likes:{key}", "dislikes" if negative else "likes")]


def _pet(m: re.Match[str], said: Said) -> list[Hit]:
    animal = m["animal"].lower().rstrip("s")
    name = m["n"] if m["n"] and _is_name(m["n"]) else animal
    return [Hit(K.ATTRIBUTE, f"pet:{animal}", name, confidence=0.75)]


def _possession(m: re.Match[str], said: Said) -> list[Hit]:
    obj = m["v"].strip()
    category = category_of(obj)
    if category is None:
        return []
    replaced = m["old"] if "old" in m.re.groupindex and m["old"] else ""
    return [Hit(K.ATTRIBUTE, category, obj, replaces=replaced)]


def _sold(m: re.Match[str], said: Said) -> list[Hit]:
    old = m["v"].strip()
    bought = re.search(
        r"(?i)\b(?:and|then)\s+(?:I\s+)?(?:bought|got|replaced it with|picked up)\s+"
        r"(?:a|an|the)\s+(?:new\s+|used\s+|second-hand\s+)?([^,.;!?]{2,40})",
        m.string[m.end() :],
    )
    if bought:
        new = bought.group(1).strip()
        return [Hit(K.ATTRIBUTE, category_of(new) or category_of(old) or "", new, replaces=old)]
    return [Hit(K.EVENT, category_of(old) or "", ends=True, replaces=old)]


def _habit(m: re.Match[str], said: Said) -> list[Hit]:
    clause = m.string
    category = category_of(clause, habit=True)
    if category is None:
        return []
    replaced = re.search(r"(?i)\binstead of (\w+(?:\s\w+)?)", clause)
    rest = re.sub(r"(?i)\binstead of \w+(?:\s\w+)?", "", clause)
    return [
        Hit(
            K.ATTRIBUTE,
            category,
            activity_of(rest) or category.split(":")[-1],
            replaces=replaced.group(1) if replaced else "",
            confidence=0.75,
        )
    ]


def _stopped(m: re.Match[str], said: Said) -> list[Hit]:
    obj = m["v"].strip()
    after = re.search(r"(?i)\b(?:now|these days|instead)\b(.*)$", m.string[m.end() :])
    if after and category_of(after.group(1), habit=True):
        new = after.group(1)
        category = category_of(new, habit=True) or ""
        return [Hit(K.ATTRIBUTE, category, activity_of(new), replaces=obj, confidence=0.75)]
    category = category_of(obj, habit=True) or ""
    return [Hit(K.EVENT, category, ends=True, replaces=obj, confidence=0.75)]


def _learning(m: re.Match[str], said: Said) -> list[Hit]:
    obj = m["v"].strip()
    first = obj.split()[0].lower() if obj.split() else ""
    key = "language" if first in lex.LANGUAGES else attribute_key(obj)
    return [Hit(K.ATTRIBUTE, f"learning:{key}", obj.split()[0] if key == "language" else obj)]


def _switched(m: re.Match[str], said: Said) -> list[Hit]:
    old, new = m["old"].strip(), m["v"].strip()
    first = new.split()[0].lower() if new.split() else ""
    if first in lex.LANGUAGES:
        attribute = "learning:language"
    else:
        attribute = category_of(new) or category_of(old, habit=True) or ""
    return [Hit(K.ATTRIBUTE, attribute, new, replaces=old, confidence=0.75)]


def _plan(m: re.Match[str], said: Said) -> list[Hit]:
    key = attribute_key(m["v"])
    return [Hit(K.PLAN, f"plan:{key}" if key else "", _when_of(m.string))]


def _plan_change(m: re.Match[str], said: Said) -> list[Hit]:
    key = attribute_key(m["what"])
    ends = m["verb"].lower() in ("cancelled", "canceled", "called off", "dropped")
    value = "" if ends else (m["v"] or "").strip()
    return [Hit(K.PLAN, f"plan:{key}" if key else "", value, ends=ends)]


def _goal(m: re.Match[str], said: Said) -> list[Hit]:
    key = attribute_key(m["v"])
    return [Hit(K.GOAL, f"goal:{key}" if key else "", confidence=0.7)]


def _decision(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.DECISION, "", m["v"].strip())]


def _event(m: re.Match[str], said: Said) -> list[Hit]:
    return [Hit(K.EVENT, "", confidence=0.65)]


def _my_thing(m: re.Match[str], said: Said) -> list[Hit]:
    thing = m["thing"].lower()
    if thing.split()[-1] in lex.RELATIONS:
        return []
    return [Hit(K.ATTRIBUTE, attribute_key(thing), m["v"].strip(), confidence=0.6)]


def _instruction(m: re.Match[str], said: Said) -> list[Hit]:
    clause = m.string
    if not said.agent or not _addresses_assistant(clause):
        return []
    replaced = re.search(r"(?i)\binstead of ([\w#+\-]+)", clause)
    topic, value = instruction_topic(re.sub(r"(?i)\binstead of [\w#+\-]+", "", clause))
    revoke = bool(
        re.search(r"(?i)\b(stop|no need to|don't have to|do not have to|forget)\b", clause)
        and re.search(r"(?i)\b(anymore|any more|no longer|stop|forget)\b", clause)
    )
    return [
        Hit(
            K.INSTRUCTION,
            f"instruction:{topic}",
            value,
            ends=revoke,
            replaces=replaced.group(1) if replaced else "",
            confidence=0.85,
        )
    ]


_IMPERATIVE = re.compile(
    r"(?i)^(?:(?:and|also|oh|ok|okay|so|from now on|going forward|in (?:the )?future|by default)"
    r"[,:]?\s+)*(?:please\s+)?(?:always|never|don't|do not|stop|keep|use|write|answer|reply|"
    r"respond|show|give|format|call|address|avoid|include|explain|remember to|make sure|be|"
    r"talk|speak|try to)\b"
)


def _addresses_assistant(clause: str) -> bool:
    """A request to the assistant: it says "you"/"your", or opens with an imperative."""
    return bool(re.search(r"(?i)\b(you|your)\b", clause) or _IMPERATIVE.search(clause))


def _call_me(m: re.Match[str], said: Said) -> list[Hit]:
    if not said.agent or not _is_name(m["v"]):
        return []
    return [Hit(K.INSTRUCTION, "instruction:name", m["v"], confidence=0.85)]


def instruction_topic(clause: str) -> tuple[str, str]:
    """The topic of a standing request ("code", "length", ...) and its salient value."""
    words = re.findall(r"[\w#+\-]+", clause.lower())
    for topic, (cues, _) in lex.INSTRUCTION_SCOPES.items():
        hit = [w for w in words if w in cues]
        if hit:
            named = [w for w in hit if w in lex.PROGRAMMING or w in lex.LANGUAGES]
            return topic, (named or hit)[-1 if topic == "code" else 0]
    content = [w for w in words if w not in lex.ADVERBS and len(w) > 3]
    return (content[-1] if content else "general"), ""


def _when_of(text: str) -> str:
    m = re.search(
        r"(?i)\b(?:in|on|next|this|by|around|for)\s+((?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|"
        r"nov|dec)[a-z]*|spring|summer|autumn|fall|winter|week|month|year|\d{4})\b",
        text,
    )
    return m.group(1) if m else ""


# --------------------------------------------------------------------------- rules

_INSTRUCTION_CUE = (
    r"(?i)\b(always|never|from now on|going forward|in (?:the )?future|by default|every time|"
    r"whenever|each time|no more|stop|keep (?:your|the|it|them|answers|replies)|"
    r"(?:please|can you|could you|would you)\s+(?:always\s+|never\s+)?(?:use|write|answer|reply|"
    r"respond|show|give|format|keep|call|address|talk|speak|avoid|include|stop)|"
    r"i (?:want|would like|'d like|prefer) (?:you|your)|no need to|don't have to)\b"
)

RULES: tuple[tuple[str, re.Pattern[str], Builder], ...] = (
    (
        "call_me",
        _rx(r"(?i:\bcall me|refer to me as|address me as)\s+(?P<v>" + _NAME + ")"),
        _call_me,
    ),
    ("instruction", _rx(_INSTRUCTION_CUE), _instruction),
    ("name", _rx(r"(?i:\bmy name is|\bi'm called|\bI am called)\s+(?P<v>" + _NAME + ")"), _name),
    ("name", _rx(r"^(?:(?i:hi|hello|hey)[!,.]?\s+)?(?:I'm|I am)\s+(?P<v>[A-Z][a-z]+)[.!,]"), _name),
    ("age", _rx(_FP + r"(?i:(?:am |'m )?(?P<v>\d{1,3}) years old|turned (?P<v2>\d{1,3}))"), _age),
    (
        "home",
        _rx(
            _FP
            + r"(?i:live|living|reside|residing|based|settled|staying)\s+(?i:in|at|near)\s+(?P<v>"
            + _PLACE
            + ")"
        ),
        _home,
    ),
    (
        "home",
        _rx(
            _FP
            + r"(?i:moved|relocated|settled|moved back)\s+(?i:to|into|in)\s+(?P<v>"
            + _PLACE
            + ")"
        ),
        _home,
    ),
    (
        "home",
        _rx(
            _I
            + _AUX
            + _ADV
            + r"\s+(?i:bought|rented|found)\s+(?i:a|an|our|my)\s+(?i:new\s+)?(?i:house|flat|apartment|place|home)\s+in\s+(?P<v>"
            + _PLACE
            + ")"
        ),
        _home,
    ),
    (
        "home",
        _rx(
            r"\b[A-Z][a-z]+\s+(?i:still\s+)?(?i:lives|lived|is living)\s+in\s+(?P<v>" + _PLACE + ")"
        ),
        _home,
    ),
    (
        "origin",
        _rx(_I + r"(?i:'m| am| come| came)\s+(?i:originally\s+)?from\s+(?P<v>" + _PLACE + ")"),
        _origin,
    ),
    (
        "work_end",
        _rx(_FP + r"(?i:quit|left|resigned from|lost)\s+(?i:my|the)\s+(?i:job|position|role|work)"),
        _work_ends,
    ),
    (
        "work_end",
        _rx(_FP + r"(?i:got|was|been)\s+(?i:laid off|fired|let go|made redundant)"),
        _work_ends,
    ),
    ("work_end", _rx(_FP + r"(?i:retired)\b"), _work_ends),
    (
        "work",
        _rx(
            _FP
            + r"(?i:work|working|works)\s+(?:(?i:as)\s+(?i:a|an)\s+[a-z][\w\- ]{2,40}?\s+)?(?i:at|for)\s+(?P<v>"
            + _ORG
            + ")"
        ),
        _work,
    ),
    (
        "work",
        _rx(
            _FP
            + r"(?i:joined|started at|started working at|started a new job at|got a (?:new )?job at|got hired (?:at|by)|was hired (?:at|by)|accepted (?:a|an|the) (?:job|offer|position|role) (?:at|from|with)|accepted an offer from|accepted the offer from)\s+(?P<v>"
            + _ORG
            + ")"
        ),
        _work,
    ),
    (
        "work",
        _rx(r"\b[A-Z][a-z]+\s+(?i:still\s+)?(?i:works|worked)\s+(?i:at|for)\s+(?P<v>" + _ORG + ")"),
        _work,
    ),
    (
        "role",
        _rx(_FP + r"(?i:work|working)\s+as\s+(?i:a|an)\s+(?P<v>[a-z][\w\- ]{2,40}?)" + _STOP),
        _role,
    ),
    (
        "role",
        _rx(
            r"\bI(?i:'m| am)"
            + _ADV
            + r"\s+(?i:a|an)\s+(?P<v>(?:[a-z][\w\-]*\s+){0,3}(?i:"
            + "|".join(sorted(lex.OCCUPATIONS))
            + r"))\b"
        ),
        _role,
    ),
    (
        "relation",
        _rx(_MY_REL + r"(?:'s name)?\s+(?i:is)\s+(?i:called\s+|named\s+)?(?P<n>" + _NAME + r")\b"),
        _relation_named,
    ),
    (
        "relation",
        _rx(
            r"\b[Mm]y\s+(?:(?i:new|current|best)\s+)?(?P<rel>(?i:"
            + _REL
            + r"))\s+(?i:at\s+"
            + _ORG
            + r"\s+)?(?i:is)\s+(?P<n>"
            + _NAME
            + r")\b"
        ),
        _relation_named,
    ),
    ("relation", _rx(_MY_REL + r",?\s+(?P<n>" + _NAME + r")\b"), _relation_named),
    (
        "dating",
        _rx(
            _FP
            + r"(?i:been\s+)?(?i:dating|seeing|going out with|engaged to|married to|in a relationship with)\s+(?:(?i:a (?:guy|girl|man|woman|person) (?:named|called))\s+)?(?P<n>"
            + _NAME
            + r")?(?:(?i:\s*someone(?: new)?),?\s*(?i:(?:his|her|their) name is)\s+(?P<n2>"
            + _NAME
            + r"))?"
        ),
        _dating,
    ),
    (
        "dating",
        _rx(r"\b(?P<n>" + _NAME + r")\s+and\s+I\s+(?i:got|are|just got)\s+(?i:engaged|married)"),
        _dating,
    ),
    (
        "breakup",
        _rx(
            r"(?:\b[A-Z][a-z]+\s+and\s+I|"
            + _I
            + _AUX
            + _ADV
            + r")\s+(?i:broke up|split up|separated|divorced|got divorced|are no longer together)"
        ),
        _breakup,
    ),
    ("breakup", _rx(r"\bI(?i:'m| am)\s+(?i:single|divorced)\b"), _breakup),
    (
        "diet",
        _rx(
            _I
            + r"(?i:'m| am|'ve been| have been| went| became| turned| gone| switched to| eat| am now)"
            + _ADV
            + r"\s+(?i:fully\s+|strictly\s+|mostly\s+|a\s+)?(?P<v>(?i:"
            + "|".join(sorted(lex.DIETS))
            + r"))\b"
        ),
        _diet,
    ),
    (
        "favourite",
        _rx(
            r"\b[Mm]y\s+(?:(?i:all-time|absolute)\s+)?(?i:favou?rite)\s+(?P<thing>[a-z][a-z ]{1,30}?)\s+(?:(?i:these days|right now|at the moment|now)\s+)?(?i:is|are|has to be)\s+(?:(?i:now|still)\s+)?(?P<v>[^,.;!?]{2,60}?)"
            + _STOP
        ),
        _favourite,
    ),
    (
        "sold",
        _rx(
            _FP
            + r"(?i:sold|gave away|got rid of|traded in)\s+(?i:my|the|our)\s+(?P<v>[^,.;!?]{2,40}?)"
            + _STOP
        ),
        _sold,
    ),
    (
        "possession",
        _rx(
            _FP
            + r"(?i:drive|own|have|got|bought|use|ordered|picked up|replaced)\s+(?:(?i:it|them)\s+with\s+)?(?i:a|an|my|the|two)\s+(?i:new\s+|used\s+|old\s+|second-hand\s+)?(?P<v>[^,.;!?]{2,40}?)"
            + _STOP
        ),
        _possession,
    ),
    (
        "pet",
        _rx(
            r"\b[Mm]y\s+(?:(?i:new|little|old)\s+)?(?P<animal>(?i:"
            + "|".join(sorted(lex.ANIMALS))
            + r"))(?:,?\s+(?P<n>"
            + _NAME
            + r"))?\b"
        ),
        _pet,
    ),
    (
        "pet",
        _rx(
            _FP
            + r"(?i:have|got|adopted|rescued)\s+(?i:a|an|two|another)\s+(?:(?i:new|little|\w+)\s+)?(?P<animal>(?i:"
            + "|".join(sorted(lex.ANIMALS))
            + r"))(?:\s+(?i:named|called)\s+(?P<n>"
            + _NAME
            + r"))?"
        ),
        _pet,
    ),
    (
        "switched",
        _rx(
            _FP
            + r"(?i:switched|changed|moved|went|upgraded|downgraded)\s+from\s+(?P<old>[^,.;!?]{2,40}?)\s+to\s+(?P<v>[^,.;!?]{2,40}?)"
            + _STOP
        ),
        _switched,
    ),
    (
        "stopped",
        _rx(_FP + r"(?i:stopped|quit|gave up|cut out|no longer)\s+(?P<v>[^,.;!?]{2,40}?)" + _STOP),
        _stopped,
    ),
    (
        "learning",
        _rx(
            _FP
            + r"(?i:learning|studying|practising|practicing|taking (?:a |an )?(?:class|course|lessons) in)\s+(?P<v>[^,.;!?]{2,40}?)"
            + _STOP
        ),
        _learning,
    ),
    (
        "plan_change",
        _rx(
            _FP
            + r"(?P<verb>(?i:postponed|moved|rescheduled|pushed back|pushed|delayed|brought forward|cancelled|canceled|called off|dropped))\s+(?i:the|our|my)\s+(?P<what>[^,.;!?]{2,40}?)(?:\s+(?i:to|until|till)\s+(?P<v>[^,.;!?]{2,30}?))?"
            + _STOP
        ),
        _plan_change,
    ),
    (
        "plan",
        _rx(
            _FP
            + r"(?i:planning|going|about|hoping|intending|plan|intend)\s+(?i:to|on)\s+(?P<v>[^,.;!?]{2,60}?)"
            + _STOP
        ),
        _plan,
    ),
    (
        "plan",
        _rx(
            _FP
            + r"(?i:planning|organising|organizing|booked|booking)\s+(?P<v>(?i:a|an|our|my)\s+[^,.;!?]{2,40}?(?:\s+(?i:to|for)\s+[^,.;!?]{2,30}?)?)"
            + _STOP_PLAN
        ),
        _plan,
    ),
    (
        "goal",
        _rx(
            r"(?:\b[Mm]y\s+(?i:goal|dream|aim|resolution)\s+(?i:is|this year is)\s+to|"
            + _FP
            + r"(?i:want to|hope to|dream of|aim to|am aiming to|'m aiming to|am trying to|'m trying to|am saving (?:up )?for|'m saving (?:up )?for|working towards))\s+(?P<v>[^,.;!?]{2,60}?)"
            + _STOP
        ),
        _goal,
    ),
    (
        "decision",
        _rx(
            _FP
            + r"(?i:decided|chose|chosen|made up (?:my|our) mind|committed|resolved)\s+(?i:to|on|against)\s+(?P<v>[^.;!?]{2,120}?)(?=[.;!?]|$)"
        ),
        _decision,
    ),
    (
        "preference",
        _rx(
            _FP
            + r"(?i:love|like|enjoy|adore|prefer|hate|dislike|can't stand|don't like|do not like|don't enjoy|no longer like|am into|'m into|am a fan of|'m a fan of|'m a big fan of|am a huge fan of)\s+"
            + _OBJ
        ),
        _likes,
    ),
    (
        "habit",
        _rx(
            _FP
            + r"(?i:usually\s+|often\s+|always\s+)?(?P<verb>[a-z]+)\s+[^.;!?]*?(?i:every|each|daily|weekly|times a|twice a|once a|on weekends|most (?:days|mornings|evenings)|a day|a week)\b"
        ),
        _habit,
    ),
    ("habit", _rx(r"(?i:\bthese days|\bnowadays|\bnow it's|\bnow I)\b[^.;!?]*"), _habit),
    (
        "my_thing",
        _rx(
            r"\b[Mm]y\s+(?P<thing>[a-z]+(?:\s+[a-z]+)?)\s+(?i:is|has been|was|are|have been|feels|looks)\s+(?P<v>[^,.;!?]{2,60}?)"
            + _STOP
        ),
        _my_thing,
    ),
    (
        "event",
        _rx(
            _I
            + r"(?:\s+(?i:just|finally|recently|also|all|both))?\s+(?i:went|visited|travelled|traveled|flew|drove|attended|saw|watched|ran|finished|completed|graduated|won|met|celebrated|started|took|made|baked|painted|wrote|adopted|hosted|organised|organized|volunteered|signed up|got back|came back|got|had|tried|joined|read|passed|failed|lost|broke|bought)\b"
        ),
        _event,
    ),
)
"""(name, pattern, builder) in order of preference; the first few rules that match a clause
win (at most one per name), most specific first."""

_EXCLUSIVE = {
    "instruction": {"*"},
    "call_me": {"*"},
    "home": {"event", "my_thing", "habit", "possession"},
    "work": {"event", "possession", "role", "habit"},
    "work_end": {"event", "stopped"},
    "switched": {"stopped", "event", "habit", "learning", "possession"},
    "plan_change": {"event", "plan", "possession"},
    "decision": {"event", "plan", "stopped", "habit", "goal", "possession", "preference"},
    "sold": {"possession", "event"},
    "stopped": {"event", "habit"},
    "favourite": {"my_thing", "preference"},
    "diet": {"event", "possession", "stopped", "my_thing", "preference", "habit"},
    "breakup": {"event", "relation"},
    "dating": {"event", "relation"},
    "plan": {"event", "possession", "goal"},
    "goal": {"event", "possession", "preference"},
    "learning": {"event", "possession", "habit"},
    "habit": {"event", "possession", "preference", "my_thing"},
    "pet": {"possession", "my_thing"},
    "possession": {"event", "my_thing"},
}
"""A rule that matched switches these later ones off for the clause ("*": all)."""


def clauses(text: str) -> Iterator[str]:
    """The clauses of a turn: sentences, split again at semicolons and ", but"."""
    for sentence in split_sentences(text):
        for part in re.split(
            r";\s+(?=(?:I|[Ww]e|[Mm]y|[A-Z][a-z]+)\b)|,\s+but\s+|\s+but\s+(?=I\b)", sentence
        ):
            if part.strip():
                yield part.strip()


def heuristic_facts(said: Said) -> list[ExtractedFact]:
    """The first-person facts of a turn (and the question it confirms), rendered to stand alone."""
    out: list[ExtractedFact] = []
    text = confirmations(said.text, said.previous)
    for clause in clauses(text):
        if clause.endswith("?") and not re.search(r"(?i)\b(keep|use|call|show|answer)\b", clause):
            continue  # a question states nothing (a request phrased as one can still instruct)
        hedged = any(w in lex.HEDGES for w in re.findall(r"[a-z]+", clause.lower()))
        off: set[str] = set()
        for name, pattern, build in RULES:
            if name in off or "*" in off:
                continue
            match = pattern.search(clause)
            if match is None:
                continue
            hits = build(match, said)
            if not hits:
                continue
            off |= _EXCLUSIVE.get(name, set()) | {name}
            colon = clause.rfind(": ", 0, match.start())
            told = clause[colon + 2 :] if colon >= 0 else clause
            for hit in hits:
                out.append(_fact(hit, told, said, hedged))
    return _distinct(out)


def _fact(hit: Hit, clause: str, said: Said, hedged: bool) -> ExtractedFact:
    subject = hit.subject or _subject_of(clause, said)
    text = hit.text or render(clause, said.subject, said.when, kind=hit.kind)
    return ExtractedFact(
        text=text,
        kind=hit.kind,
        subject=subject if hit.kind is not K.RELATIONSHIP else said.subject,
        attribute=hit.attribute,
        value=hit.value,
        confidence=round(hit.confidence * (0.7 if hedged else 1.0), 3),
        concepts=concepts_for(hit.kind, hit.attribute, hit.value),
        since=since_date(clause, said.when),
        ends=hit.ends,
        replaces=hit.replaces,
    )


def _subject_of(clause: str, said: Said) -> str:
    """Whom a clause is about: a named relation ("my sister Claire"), a name, else the speaker."""
    m = re.search(
        _MY_REL + r",?\s+(?P<n>" + _NAME + r")\s+(?i:still\s+|now\s+|also\s+)?"
        r"(?i:lives|lived|works|worked|moved|is|was|has|had|got|left|studies|loves|likes)\b",
        clause,
    )
    if m and _is_name(m["n"]):
        return m["n"]
    m = re.match(
        r"\s*(?:(?i:also|and|so|then|well|oh),?\s+)?(?P<n>"
        + _NAME
        + r")\s+(?i:still\s+)?(?i:lives|lived|works|worked|left|moved|is|was|has)\b",
        clause,
    )
    if m and _is_name(m["n"]) and m["n"] not in ("I",):
        return m["n"]
    m = re.search(
        r"\b[Mm]y\s+(?P<rel>(?i:"
        + _REL
        + r"))\s+(?i:still\s+)?(?i:lives|lived|works|worked|is|was|moved)\b",
        clause,
    )
    if m:
        owner = "user" if said.subject == USER_SUBJECT else said.subject
        return f"{owner}'s {m['rel'].lower()}"
    return said.subject


def _distinct(facts: list[ExtractedFact]) -> list[ExtractedFact]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in facts:
        key = (f.text, f.attribute, f.kind.value)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
