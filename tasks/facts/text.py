"""Text work of the offline fact heuristic: third-person rendering with absolute dates, attribute
keys and categories, concepts, and reading a "yes" as the question it confirms.

Pure functions over strings (and the turn's date); no model, no store.
"""

from __future__ import annotations

import re
from datetime import datetime

from memory.schema import USER_SUBJECT, FactKind, as_utc
from memory.text.timeparse import MONTHS, parse_time
from memory.write.contextual import dates_resolved
from tasks.facts import lexicon as lex
from tasks.keywords import STOPWORDS

_MONTH_WORD = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december)"
)
_TIME_WORDS = frozenset(
    """january february march april may june july august september october november december
    spring summer autumn fall winter week weekend month year day morning evening night today
    tomorrow yesterday next last this""".split()
)


def attribute_key(phrase: str) -> str:
    """A stable key for what a phrase is about: its content words, sorted, times left out."""
    words = [
        w
        for w in re.findall(r"[a-z][a-z'\-]+", phrase.lower())
        if w not in STOPWORDS and w not in _TIME_WORDS and len(w) > 2 and not w.endswith("'s")
    ]
    return " ".join(sorted(dict.fromkeys(words))[:3])


_THING_ATTRIBUTES = (
    ("phone", lex.PHONE_WORDS),
    ("car", lex.CAR_WORDS),
    ("bike", frozenset("bike bicycle motorbike scooter".split())),
    ("computer", frozenset("laptop computer pc macbook notebook".split())),
)
_OTHER_ATTRIBUTES = (
    ("diet", lex.DIETS | {"diet"}),
    ("learning:instrument", lex.INSTRUMENTS),
    ("learning:language", lex.LANGUAGES),
)
_HABIT_ATTRIBUTES = (("habit:exercise", lex.EXERCISE), ("habit:drink", lex.DRINK_WORDS))


def attribute_of(text: str, *, things: bool = False, habits: bool = False) -> str | None:
    """The attribute a thing, activity or phrase belongs to (`car`, `phone`, `diet`,
    `learning:language`, `habit:exercise`, ...), or None. `habits` looks at activities first
    ("golf" the sport), `things` only at possessions ("a Golf" the car)."""
    words = set(re.findall(r"[a-z][a-z\-]*", text.lower()))
    order: tuple[tuple[str, frozenset[str]], ...]
    if things:
        order = _THING_ATTRIBUTES
    elif habits:
        order = _HABIT_ATTRIBUTES + _OTHER_ATTRIBUTES + _THING_ATTRIBUTES
    else:
        order = _THING_ATTRIBUTES + _OTHER_ATTRIBUTES + _HABIT_ATTRIBUTES
    return next((name for name, lexicon in order if words & lexicon), None)


_DETERMINERS = re.compile(
    r"^(?:(?:a|an|the|my|our|his|her|their|some|used|new|old|second-hand|brand-new|brand new|"
    r"little|big|first|proper|beat-up)\s+)+"
)
"""Lower-case only: "The Wire" and "New York" keep their first word."""


def clean_value(value: str) -> str:
    """A value without leading articles and adjectives of state ("a used Tesla" -> "Tesla")."""
    out = _DETERMINERS.sub("", value.strip())
    out = re.sub(r"(?i)\s+(?:instead|too|as well|now|again|anymore)$", "", out)
    out = out.strip(" ,;:")
    return out[:-1] if out.endswith((".", "!", "?")) and not re.search(r"\b\w\.$", out) else out


def activity_of(text: str) -> str:
    """The activity or drink a habit names ("green tea", "swimming"), or ""."""
    words: list[str] = re.findall(r"[a-z][a-z\-]*", text.lower())
    generic = ("drink", "drinks")
    for i, w in enumerate(words):
        if (w in lex.EXERCISE or w in lex.DRINK_WORDS) and w not in generic:
            if i and words[i - 1] in (
                "green",
                "black",
                "herbal",
                "iced",
                "mint",
                "oat",
                "diet",
                "sparkling",
            ):
                return f"{words[i - 1]} {w}"
            if w == "sparkling" and i + 1 < len(words):
                return f"{w} {words[i + 1]}"
            return w
    return ""


def concepts_for(kind: FactKind, attribute: str, value: str) -> list[str]:
    """Key concepts of a fact: what its attribute means in words, and its value."""
    base = attribute.split(":")
    head = base[0]
    words: dict[str, tuple[str, ...]] = {
        "home": ("home", "lives in", "city"),
        "origin": ("from", "origin"),
        "work": ("job", "works at", "employer"),
        "role": ("job", "occupation"),
        "partner": ("partner", "dating", "relationship"),
        "diet": ("diet", "eats", "food"),
        "car": ("car", "drives"),
        "phone": ("phone",),
        "habit": ("habit", "routine"),
        "learning": ("learning", "studying"),
        "favourite": ("favourite",),
        "plan": ("plan", "trip"),
        "goal": ("goal",),
        "pet": ("pet",),
    }
    out = list(words.get(head, (head,) if head and kind is FactKind.ATTRIBUTE else ()))
    if kind is FactKind.RELATIONSHIP:
        out = list(words["partner"]) if head == "partner" else [head, "relationship"]
    if kind is FactKind.INSTRUCTION:
        topic = base[1] if len(base) > 1 else ""
        out = list(lex.INSTRUCTION_SCOPES.get(topic, (frozenset(), ("instruction",)))[1])
    elif head == "habit" and len(base) > 1:
        extra = ("sport", "fitness") if base[1] == "exercise" else ("morning", "beverage")
        out = [base[1], *extra]
    elif len(base) > 1 and base[1]:
        out.append(base[1])
    if value and len(value.split()) <= 3 and value.lower() not in (c.lower() for c in out):
        out.append(value)
    return out[:5] if kind is not FactKind.INSTRUCTION else out[:7]


# --------------------------------------------------------------------------- rendering

_FIRST = (
    (r"\bI'm\b", "{s} is"),
    (r"\bI am\b", "{s} is"),
    (r"\bI've\b", "{s} has"),
    (r"\bI'd\b", "{s} would"),
    (r"\bI'll\b", "{s} will"),
    (r"\b[Ww]e're\b", "{s} is"),
    (r"\b[Ww]e are\b", "{s} is"),
    (r"\b[Ww]e've\b", "{s} has"),
    (r"\b[Ww]e'll\b", "{s} will"),
    (r"\b[Ww]e'd\b", "{s} would"),
    (r"\bI\b", "{s}"),
    (r"\b[Ww]e\b", "{s}"),
    (r"\b[Mm]y\b", "{p}"),
    (r"\b[Oo]ur\b", "{p}"),
    (r"\b[Mm]ine\b", "{p}"),
    (r"\b[Mm]yself\b", "{o}"),
    (r"\bme\b", "{o}"),
    (r"\bus\b", "{o}"),
)


_SUBJECT_MARK = "\x01"
"""Stands for the speaker as a grammatical subject while verbs are made to agree with it."""


def _agree(text: str) -> str:
    r"""Third-person verbs after the subject mark: "\x01 live" -> "\x01 lives"."""
    adverbs = "|".join(sorted(lex.ADVERBS))
    pattern = re.compile(
        rf"({_SUBJECT_MARK}(?:\s+(?:{adverbs}))*\s+)([a-z]+?)(n't)?\b", re.IGNORECASE
    )
    compound = re.compile(r"(?:\b[A-Z][a-z]+|\b(?:my|our|his|her|their)\s+\w+)\s+and\s+$")

    def fix(m: re.Match[str]) -> str:
        lead, verb, negation = m.group(1), m.group(2), m.group(3) or ""
        if compound.search(m.string[: m.start()]):  # "Tom and I split up": a plural subject
            return m.group(0)
        low = verb.lower()
        if negation:
            return lead + {"do": "does", "have": "has", "are": "is"}.get(low, low) + negation
        if low in lex.IRREGULAR_THIRD:
            return lead + lex.IRREGULAR_THIRD[low]
        if (
            low in lex.NOT_PRESENT
            or low in ("is", "has", "does", "goes", "not", "to", "and", "also", "or")
            or low.endswith(("ed", "s"))
            or low in lex.ADVERBS
        ):
            return m.group(0)
        if low.endswith("y") and low[-2:-1] not in "aeiou":
            return lead + low[:-1] + "ies"
        if low.endswith(("ch", "sh", "x", "o", "z")):
            return lead + low + "es"
        return lead + low + "s"

    return pattern.sub(fix, text)


def third_person(clause: str, subject: str) -> str:
    """The clause with the speaker named instead of I/we/my (verbs agreeing)."""
    name = "the user" if subject == USER_SUBJECT else subject
    possessive = "the user's" if subject == USER_SUBJECT else f"{subject}'s"
    out = clause.replace("\u2019", "'")
    for pattern, repl in _FIRST:
        out = re.sub(pattern, repl.format(s=_SUBJECT_MARK, p=possessive, o=name), out)
    return _agree(out).replace(_SUBJECT_MARK, name)


def absolute_dates(text: str, when: datetime, *, future: bool) -> str:
    """Relative dates made absolute ("yesterday (7 May 2026)", "in March" -> "in March 2026")."""
    moment = as_utc(when)
    out = dates_resolved(text, moment)

    def year(m: re.Match[str]) -> str:
        month = MONTHS[m.group(2).lower()[:3]]
        if future:
            y = moment.year if month >= moment.month else moment.year + 1
        else:
            y = moment.year if month <= moment.month else moment.year - 1
        return f"{m.group(1)}{m.group(2)} {y}"

    return re.sub(
        rf"(\b(?:in|since|until|till|by|to|from|of|last|next|this|early|late|mid-?)\s+)"
        rf"{_MONTH_WORD}\b(?!\s*,?\s*\d)",
        year,
        out,
        flags=re.IGNORECASE,
    )


def render(clause: str, subject: str, when: datetime, *, kind: FactKind) -> str:
    """A clause as a standalone proposition: third person, absolute dates, a full stop."""
    if kind is FactKind.INSTRUCTION:
        body = clause.strip().rstrip("?.!")
        body = re.sub(r"(?i)^(?:and|also|oh|so|ok|okay),?\s+", "", body)
        return f"Standing instruction from the user: {body}."
    text = third_person(clause.strip(), subject)
    future = kind in (FactKind.PLAN, FactKind.GOAL, FactKind.DECISION)
    text = absolute_dates(text, when, future=future)
    text = re.sub(
        r"^(?i:and|also|oh|so|well|honestly|actually|bad news|big news|great news)[,:!]?\s+",
        "",
        text,
    )
    text = text.rstrip(" ,;:")
    if not text.endswith((".", "!", "?")):
        text += "."
    return text[:1].upper() + text[1:]


def since_date(clause: str, when: datetime) -> str:
    """The ISO date a clause says something started ("since May", "since last Monday"), or ""."""
    m = re.search(r"(?i)\bsince\s+([^,.;!?]{2,30})", clause)
    if not m:
        return ""
    window = parse_time(m.group(1), as_utc(when)).window
    if window is None:
        m2 = re.match(rf"(?i){_MONTH_WORD}\b", m.group(1).strip())
        if not m2:
            return ""
        month = MONTHS[m2.group(1).lower()[:3]]
        moment = as_utc(when)
        y = moment.year if month <= moment.month else moment.year - 1
        return f"{y:04d}-{month:02d}-01"
    return window.start.date().isoformat()


# --------------------------------------------------------------------------- confirmations

_QUESTION = re.compile(
    r"(?i)\b(are|do|did|have|were|will|is|does|was|would|can)\s+(you|your)\b([^?]*)\?\s*$"
)
_TO_FIRST = (
    (r"(?i)\byours\b", "mine"),
    (r"(?i)\byourself\b", "myself"),
    (r"(?i)\byour\b", "my"),
    (r"(?i)\byou\b", "I"),
)


def confirmations(text: str, previous: str) -> str:
    """`text`, with a leading "yes" replaced by the statement of the question it answers.

    "Are you working at Globex now?" + "Yes, since May." -> "I am working at Globex now, since
    May." A question not addressed to the speaker ("you") or any other answer is left as it is.
    """
    lead = re.match(
        r"(?i)^\s*(" + "|".join(re.escape(a) for a in lex.AFFIRMATIONS) + r")\b[!,.\s]*", text
    )
    if not lead or not previous.strip():
        return text
    last = re.split(r"(?<=[.!?])\s+", previous.strip())[-1]
    q = _QUESTION.search(last)
    if not q:
        return text
    aux, who, rest = q.group(1).lower(), q.group(2).lower(), q.group(3).strip()
    if who == "your":
        statement = f"My {rest}"
        statement = re.sub(r"(?i)^My (\w+)\s+(.*)$", rf"My \1 {aux} \2", statement)
    else:
        verb = {"are": "am", "were": "was", "do": "", "does": "", "did": "did"}.get(aux, aux)
        statement = f"I {verb} {rest}".replace("  ", " ")
    for pattern, repl in _TO_FIRST:
        statement = re.sub(pattern, repl, statement)
    remainder = text[lead.end() :].strip()
    first, _, others = remainder.partition(". ")
    if first and not re.match(r"(?i)^(I|we|my)\b", first):
        statement = f"{statement}, {first.rstrip('.')}"
        remainder = others
    return f"{statement}. {remainder}".strip()


__all__ = [
    "absolute_dates",
    "attribute_key",
    "attribute_of",
    "clean_value",
    "concepts_for",
    "confirmations",
    "render",
    "since_date",
    "third_person",
]
