"""What a sentence about a goal says of it: done, given up, changed or neither (offline).

Read from a few grammatical signals, not from lists of topical words:

- **done**: the goal's own verb, or a verb of getting ("got", "bought", "won"), in a perfective
  form governing the goal's object ("run a marathon" <- "ran my first marathon", "save up for
  a car" <- "bought the car", "quit smoking" <- "I've quit smoking"; not "wrote three pages of
  the book"), a verb of achievement in a perfective form ("finished", "passed", "reached",
  "completed"), the object said to be done or complete, or an ability reached ("can swim now");
- **given up**: a verb that ends an undertaking, in any tense ("give up", "drop", "scrap",
  "shelve", "withdraw"...), a negated intention or future ("not going to", "won't ... anymore",
  "do not intend to"), "no longer", "no more"; for a goal of ending something ("quit smoking",
  "stop drinking") these say it was done;
- **changed**: a replacement construction ("instead", "rather than", "in place of", "turned
  into"), a verb of changing or rescheduling ("switched", "swapped", "postponed",
  "moved to September"), a new goal or target, or a goal given up in a sentence that says what
  the speaker does now.

A cue counts only when it is not negated ("never gave up"), not hypothetical or approximate
("might quit", "almost finished") and its subject is not another person ("my sister got
her licence"): `goal_rules` asks for the sentence to be the speaker's, about the goal, and not
a question. The verb classes are closed classes (ending, achieving, getting, changing), matched
in every inflection through `memory.text.verbs`; nothing here names a topic. A clause is read
for a change first (on its whole sentence: a replacement spans clauses), then for the goal's
own verb done, then for giving up, then for done.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from functools import lru_cache

from memory.schema import GoalStatus
from memory.text.relations import RELATIONS
from memory.text.sparse import token_set
from memory.text.verbs import inflections, perfective


def _forms(bases: Iterable[str]) -> str:
    """A regex alternation of every inflection of each base verb (a phrasal verb's particle
    after its first word: "give up" -> gave up, giving up...)."""
    out: set[str] = set()
    for phrase in bases:
        verb, _, rest = phrase.partition(" ")
        for form in inflections(verb):
            out.add(re.escape(f"{form} {rest}".strip()).replace(r"\ ", r"\s+"))
    return "(?:" + "|".join(sorted(out, key=len, reverse=True)) + ")"


def _perfective_forms(bases: Iterable[str]) -> str:
    out = {re.escape(f) for b in bases for f in perfective(b)}
    return "(?:" + "|".join(sorted(out, key=len, reverse=True)) + ")"


# Verbs that end an undertaking, in any tense ("I'm dropping it" is a decision too), but not
# followed by a place or a time ("stopped at the bakery", "dropped to 80 kilos").
_ENDING_BASES = (
    "give up|quit|stop|drop|abandon|cancel|call off|scrap|shelve|ditch|withdraw|pull out|"
    "walk away|decide against|forget about".split("|")
)
_ENDING = _forms(_ENDING_BASES)
_ENDING_VERBS = frozenset(b.split()[0] for b in _ENDING_BASES) | {"kick", "cut"}
"""The verb of a goal of ending something ("quit smoking", "stop drinking", "kick the habit",
"cut out sugar"): its object ended is the goal done."""
_GIVEN_UP = re.compile(
    rf"\b(?:{_ENDING}(?!\s+(?:at|by|in|into|over|to|for)\b)|"
    r"let (?:it|that|this|them|the \w+(?: \w+)?) go|no longer|no more|"
    r"(?:is|isn't|not) happening|done with|for good)\b(?!['’]\w)",
    re.IGNORECASE,
)
_NEGATED_INTENT = re.compile(
    r"(?:\b(?:not|never)|n't)\s+(?:\w+\s+){0,2}?"
    r"(?:going to|gonna|intend\w*|plan(?:ning)? to|pursu\w+|happening)\b"
    r"|(?:\b(?:not|never)|n't)\b[^,;:]*\b(?:any ?more|any longer|after all)\b",
    re.IGNORECASE,
)
"""A negated intention or future: "we're not going to Japan after all", "I won't be applying
anymore", "I do not intend to pursue it"."""

_ACHIEVING = _perfective_forms(
    "finish complete achieve accomplish succeed pass graduate reach attain earn obtain win "
    "receive".split()
)
_DONE = re.compile(
    rf"\b(?:{_ACHIEVING}|(?:did|done|made|nailed) it|crossed the finish|complete|"
    r"done(?!\s+for\s+(?:the|today|tonight|now|this|a)\b)|"
    r"(?:hit|reached|met|smashed) (?:my|the|our) (?:goal|target)|"
    r"(?:goal|target) (?:reached|met|hit)|"
    r"can (?:\w+ ){0,3}now)\b(?!['’]\w)",
    re.IGNORECASE,
)
# Verbs of changing a plan or its date, in any tense.
_CHANGING = _forms(
    "change|switch|swap|trade|exchange|replace|reset|upgrade|downgrade|postpone|reschedule|"
    "push back|scale back|scale down|scale up|turn into".split("|")
)
_DATES = "|".join(
    sorted(
        {
            m.lower()
            for m in (*calendar.month_name[1:], *calendar.month_abbr[1:], *calendar.day_name)
        },
        key=len,
    )[::-1]
)
_WHEN = (
    rf"(?:the\s+)?(?:(?:next|early|late|end of|autumn|fall|spring|summer|winter|{_DATES})\b|"
    r"\d\w*)"
)
"""The start of a time after "moved to" ("September", "next year", "the 12th", "spring")."""
_CHANGED = re.compile(
    rf"\b(?:instead|rather than|in place of|{_CHANGING}|"
    rf"(?:moved|pushed|put off|delayed) (?:\w+ )?(?:to|until|till) {_WHEN}|"
    r"new (?:goal|target|plan)|(?:now|am|'m) aiming|aiming (?:for|at)|changed my mind)"
    r"\b(?!['’]\w)",
    re.IGNORECASE,
)
_NOW_DOING = re.compile(
    r"\b(?:i'm|i am|we're|we are|i'll|we'll|i will|we will)\b[^.!?]*\bnow\b"
    r"|\bnow\b[^.!?]*\b(?:i'm|i am|we're|we are)\b",
    re.IGNORECASE,
)
"""A sentence saying what the speaker does now: with a goal given up, the goal changed."""

_NEGATED = re.compile(r"(?:\b(?:not|never|no|nothing|yet to)|n't)\W*(?:\w+\W+){0,2}$")
_UNSURE = re.compile(
    r"\b(?:almost|nearly|might|could|should|would|considering|thinking (?:of|about)|"
    r"about to|(?:want|wants|hope|hoping|plan|planning|try|trying|need|going) to|if|whether)"
    r"\W+(?:\w+\W+){0,1}$",
    re.IGNORECASE,
)
"""Before a cue: it is not (yet) so ("almost finished", "might quit", "want to give up")."""
_OTHER_SUBJECT = re.compile(
    r"\b(?:(?:my|our|his|her|their)\s+(?:(?:little|big|older|younger|best)\s+)?(?:"
    + "|".join(sorted(RELATIONS, key=len, reverse=True))
    + r")s?|he|she|they)\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
"""Text before a cue whose subject is another person: "my sister (just) got ..."."""
_GOVERNED = re.compile(r"^(?:\s*\b(?!of\b|at\b|by\b|for\b|in\b)[\w'-]+\b[\s,]*){0,4}?$")
"""What may stand between a verb and its object: up to four words, none a preposition that
makes the object another noun's ("words of the novel", "stopped at the bakery")."""
_VERB = re.compile(
    r"\bto\s+(?:(?:be able to|finally|really|actually|eventually)\s+)?([a-z]+)\b",
    re.IGNORECASE,
)
_NOT_VERBS = frozenset("be have a an the my their his her".split())


def goal_verb(text: str) -> str | None:
    """The verb of a goal's text ("The user wants to run a marathon" -> "run"), or None."""
    match = _VERB.search(text)
    if match is None or match.group(1).lower() in _NOT_VERBS:
        return None
    return match.group(1).lower()


def _holds(sentence: str, start: int) -> bool:
    before = sentence[:start]
    return not (
        _NEGATED.search(before.lower()) or _UNSURE.search(before) or _OTHER_SUBJECT.search(before)
    )


def _cue(sentence: str, pattern: re.Pattern[str]) -> bool:
    for match in pattern.finditer(sentence):
        if pattern is _GIVEN_UP and match.group(0).lower() == "is happening":
            continue  # "is happening" gives up only negated ("isn't happening")
        if _holds(sentence, match.start()):
            return True
    return False


@lru_cache(maxsize=1024)
def _perfective_of(verb: str) -> re.Pattern[str]:
    forms = "|".join(re.escape(f) for f in sorted(perfective(verb), key=len, reverse=True))
    return re.compile(rf"\b(?:{forms})\b(?!['’]\w)", re.IGNORECASE)


def _done_by_its_verb(sentence: str, verb: str, words: frozenset[str]) -> bool:
    """`verb` (the goal's own, or one of getting) in a perfective form, governing one of
    `words` (or "it")."""
    for match in _perfective_of(verb).finditer(sentence):
        if not _holds(sentence, match.start()):
            continue
        rest = sentence[match.end() :]
        for object_at in re.finditer(r"[\w']+", rest[:80]):
            said = object_at.group(0).lower()
            if said in {"it", "that", "this"} or token_set(said) & words:
                if _GOVERNED.match(rest[: object_at.start()]):
                    return True
                break
    return False


_GETTING = ("get", "buy", "earn", "win", "obtain", "receive")
"""Verbs of getting: with the goal's object after them, done whatever the goal's verb ("save
up for a car" <- "bought the car")."""


@lru_cache(maxsize=4096)
def _says_change(sentence: str) -> bool:
    """A change cue in the sentence (read once for all its clauses)."""
    return _cue(sentence, _CHANGED)


def read(
    clause: str, sentence: str, objects: frozenset[str], verb: str | None
) -> GoalStatus | None:
    """What a clause about the goal (of `sentence`; `objects`: the goal's object words without
    its verb; `verb`: the goal's verb) says: evolved (read on the whole sentence, as a
    replacement spans clauses), abandoned, completed, or None when it says neither."""
    if _says_change(sentence):
        return GoalStatus.EVOLVED
    verbs = (verb, *_GETTING) if verb else _GETTING
    if any(_done_by_its_verb(clause, v, objects) for v in verbs):
        return GoalStatus.COMPLETED  # before giving up: "quit smoking" <- "I've quit smoking"
    if _cue(clause, _GIVEN_UP) or _NEGATED_INTENT.search(clause):
        if verb in _ENDING_VERBS:
            return GoalStatus.COMPLETED  # ending what a goal of ending names: "stop drinking"
        return GoalStatus.EVOLVED if _NOW_DOING.search(sentence) else GoalStatus.ABANDONED
    if _cue(clause, _DONE):
        return GoalStatus.COMPLETED
    return None


def read_fact(text: str) -> GoalStatus | None:
    """What a fact that superseded a goal's fact says of it: abandoned, completed or None."""
    if _cue(text, _GIVEN_UP) or _NEGATED_INTENT.search(text):
        return GoalStatus.ABANDONED
    if _cue(text, _DONE):
        return GoalStatus.COMPLETED
    return None
