"""The offline fact heuristic: first-person statements of a turn as typed propositions.

It reads what a speaker says about themselves and the people around them: identity, home, work,
relationships, possessions, preferences, habits, plans, goals, decisions, events and, in a
conversation with the assistant, standing instructions. Each clause is matched against general
English sentence shapes (`RULES`, built from `_TABLE` and the word lists of
`tasks.facts.lexicon`); a match is read by its builder (`tasks.facts.builders`) into kind,
attribute and value (what a later statement can replace), then rewritten in the third person
with absolute dates (`tasks.facts.text.render`). A short "yes, since May" is read as the
confirmation of the question before it. Nothing here knows any data set; it answers the fact
part of the extraction schema when no LLM is configured or the call fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory.schema import USER_SUBJECT, FactKind
from memory.text.chunking import split_sentences
from tasks.directives import is_question, is_quoted, polite_request, unsafe_request
from tasks.extract import ExtractedFact
from tasks.facts import builders as b
from tasks.facts import lexicon as lex
from tasks.facts.builders import Builder, Hit, Said, is_name
from tasks.facts.requests import user_request
from tasks.facts.text import concepts_for, confirmations, render, since_date

__all__ = ["RULES", "Said", "clauses", "heuristic_facts", "instruction_topic", "requests_of"]

K = FactKind

_ADV = r"(?:\s+(?i:" + "|".join(sorted(lex.ADVERBS)) + r"))*"
_I = r"(?:\bI\b|\b[Ww]e\b)"
_AUX = r"(?:\s*(?i:'m|'re|'ve|'d|'ll| am| are| have| had| will| would| do| did))?"
_STOP = (
    r"(?=\s+(?i:and|but|because|since|so|which|who|when|while|as|with|at|on|in|for|every|each|"
    r"twice|once|instead|now|these|this|last|next|from|to|until|after|before|still)\b|[,.;:!?)]|$)"
)
_PARTS = {
    "FP": _I + _AUX + _ADV + r"\s+",
    "FP0": r"(?:" + _I + _AUX + _ADV + r"\s+|^(?:(?i:just|finally|also|recently|so)\s+)?)",
    "NAME": r"(?:(?:Dr|Mr|Mrs|Ms|Prof)[.\x02]?\s+)?(?:[A-Z][.\x02]\s+){0,2}[A-Z][a-zà-ÿ'\-]+(?:\s+(?:Le\s+|De\s+|Van\s+)?[A-Z][a-zà-ÿ'\-]+)?",
    "PLACE": r"[A-Z][\w'\-]+(?:[\s\-]+(?:[A-Z][\w'\-]+|(?:de|da|do|del|la|le|sur|upon|on)(?=[\s\-]+[A-Z])))*",
    "ORG": r"[A-Z][\w&'.\-]*(?:\s+(?:&\s+|of\s+)?[A-Z][\w&'.\-]*)*",
    "WORKPLACE": r"(?:(?:a|an|the)\s+(?:[a-z\-]+\s+){0,3}(?i:"
    + "|".join(sorted(lex.WORKPLACES))
    + r")|[A-Z][\w&'.\-]*(?:\s+(?:&\s+|of\s+)?[A-Z][\w&'.\-]*)*)",
    "REL": "(?i:" + "|".join(sorted(lex.RELATIONS, key=len, reverse=True)) + ")",
    "OCC": "(?i:" + "|".join(sorted(lex.OCCUPATIONS)) + ")",
    "DIET": "(?i:" + "|".join(sorted(lex.DIETS)) + ")",
    "ANIMAL": "(?i:" + "|".join(sorted(lex.ANIMALS)) + ")",
    "THING": r"[^,.;:!?]{2,40}?",
    "STOP": _STOP,
    "PSTOP": _STOP.replace("|from|to|", "|from|"),
}
_MY_REL = (
    r"\b[Mm]y\s+(?:(?i:new|old|little|big|older|younger|best|ex|ex-|current)\s+)?(?P<rel>@REL@)"
)

# One rule a line: its name (the builder in `tasks.facts.builders`, or below), then its
# pattern with @PART@ placeholders. Earlier lines are preferred; see `_EXCLUSIVE`.
_TABLE = r"""
call_me       (?i:\bcall me|refer to me as|address me as)\s+(?P<v>@NAME@)
instruction   .+
name          (?i:\bmy name is|\bi'm called|\bI am called)\s+(?P<v>@NAME@)
name          ^(?:(?i:hi|hello|hey)[!,.]?\s+)?(?:I'm|I am)\s+(?P<v>[A-Z][a-z]+)[.!,]
age           @FP@(?i:(?:am |'m )?(?P<v>\d{1,3}) years old|turned (?P<v2>\d{1,3}))
home          @FP@(?i:live|living|reside|residing|based|settled|staying)\s+(?i:in|at|near)\s+(?P<v>@PLACE@)
home          @FP0@(?i:moved|relocated|settled|moved back)\s+(?i:to|into|in)\s+(?P<v>@PLACE@)
home          \b(?i:home)\s+(?i:for now\s+|now\s+|these days\s+)?(?i:is)\s+(?:(?i:a|an|the|my|our)\s+[^,.;!?]{0,40}?\s+in\s+)?(?P<v>@PLACE@)
home          @FP0@(?:(?i:been)\s+)?(?i:bought|rented|renting|rent|own|found|got|moved into)\s+(?i:a|an|our|my)\s+(?:(?i:new|small|tiny|little|big|nice)\s+)?(?i:house|flat|apartment|place|home|condo|studio|loft|room|cottage|townhouse)\s+in\s+(?P<v>@PLACE@)
home          \b[A-Z][a-z]+\s+(?i:still\s+|also\s+)?(?i:lives|lived|is living)\s+in\s+(?P<v>@PLACE@)
home          @MY_REL@\s+(?i:still\s+|also\s+|now\s+)?(?i:lives|lived|is living|moved)\s+(?i:in|to)\s+(?P<v>@PLACE@)
origin        @I@(?i:'m| am| come| came)\s+(?i:originally\s+)?from\s+(?P<v>@PLACE@)
replacement   ^(?P<old>[A-Z][^;,]{1,30}?)\s+(?i:is|'s)\s+(?i:off|cancelled|canceled|not happening|called off)[;,]\s*@FP@(?P<verb>(?i:doing|going to|visiting|heading to|off to|booked|going))\s+(?P<v>@THING@)@STOP@
replacement   @FP0@(?i:don't|do not|no longer|never)\s+(?P<old>@THING@)\s+(?i:anymore|any more|now)?\s*[,;]\s*(?:(?i:now)\s+)?(?:(?i:I|we)\s*(?i:'m|'re| am| are)?\s+)(?P<verb>(?i:take|use|drive|ride|go|have|drink|eat|do|play|work|walk|cycle|on))\s+(?P<v>@THING@)@STOP@
replacement   (?i:\bno more|\bno longer any)\s+(?P<old>@THING@)(?:\s+(?i:for me))?\s*[,;]\s*@FP@(?P<verb>(?i:switched to|drink|have|use|eat|take|now))\s+(?P<v>@THING@)@STOP@
instead       (?:^|[:,]\s*)(?P<v>[^,.;:!?]{2,50}?)\s+(?i:instead of)\s+(?P<old>[^,.;!?]{2,40}?)@STOP@
called_off    ^(?P<old>[A-Z][^;,]{1,30}?)\s+(?i:is|'s)\s+(?i:off|cancelled|canceled|not happening|called off)\b
replacement   @FP0@(?i:stopped|quit|gave up|left|dropped|cancelled|canceled|sold|traded(?: in)?|got rid of|swapped|passed|finished|completed)\s+(?:(?i:the|my|our)\s+)?(?P<old>@THING@)(?:\s+(?i:in))?(?:\s+(?i:and|for|for a|for an)\s+|\s*,\s*)(?:(?i:then|now)\s+)?(?:(?i:I|we)(?:'m|'re|\s+am|\s+are)?\s+)?(?:(?i:just|now)\s+)?(?P<verb>(?i:started learning|started|took up|switched to|booked|bought|got|picked up|teach|work|study|studying for|studying|learning|taking|doing|playing|using|joined|moved to|a|an))\s+(?P<v>@THING@)@STOP@
work_end      @FP@(?i:quit|left|resigned from|lost)\s+(?i:my|the)\s+(?i:job|position|role|work)
work_end      @FP@(?i:got|was|been)\s+(?i:laid off|fired|let go|made redundant)
work_end      @FP@(?i:retired)\b
work          @FP@(?i:work|working|works)\s+(?:(?i:as)\s+(?i:a|an)\s+[a-z][\w\- ]{2,40}?\s+)?(?i:at|for)\s+(?P<v>@WORKPLACE@)
work          @FP0@(?i:joined|started at|started working at|started a new job at|got a (?:new )?job at|got a job as (?:a|an) (?P<role>[a-z ]+?) at|got hired (?:as (?:a|an) (?P<role2>[a-z ]+?) )?(?:at|by)|was hired (?:as (?:a|an) (?P<role3>[a-z ]+?) )?(?:at|by)|started (?:as (?:a|an) (?P<role4>[a-z ]+?) )at|accepted (?:a|an|the) (?:job|offer|position|role) (?:at|from|with)|accepted an offer from|accepted the offer from)\s+(?P<v>@WORKPLACE@)
work          @FP@(?i:teach|lecture|nurse|practise|practice|study)\s+(?:[a-z]+\s+){0,3}(?i:at|in)\s+(?P<v>@WORKPLACE@)
work          \b[A-Z][a-z]+\s+(?i:still\s+|also\s+)?(?i:works|worked)\s+(?i:at|for)\s+(?P<v>@WORKPLACE@)
work          @MY_REL@\s+(?i:still\s+|also\s+|now\s+)?(?i:works|worked)\s+(?i:at|for)\s+(?P<v>@WORKPLACE@)
role          @FP@(?i:work|working)\s+as\s+(?i:a|an)\s+(?P<v>[a-z][\w\- ]{2,40}?)@STOP@
role          \bI(?i:'m| am)@ADV@\s+(?i:a|an)\s+(?P<v>(?:[a-z][\w\-]*\s+){0,3}@OCC@)\b(?:\s+(?i:at|for|in)\s+(?P<org>@WORKPLACE@))?
relation      @MY_REL@(?:'s name)?\s+(?i:is)\s+(?i:called\s+|named\s+)?(?P<n>@NAME@)\b
relation      \b[Mm]y\s+(?:(?i:new|current|best)\s+)?(?P<rel>@REL@)\s+(?i:at\s+@ORG@\s+)?(?i:is)\s+(?P<n>@NAME@)\b
relation      @MY_REL@,?\s+(?P<n>@NAME@)\b
dating        @FP@(?i:met|am seeing|'m seeing|been seeing|found)\s+(?i:someone)\b[^.;!?]*?\b(?i:his|her|their)\s+name\s+is\s+(?P<n2>@NAME@)
dating        @FP@(?i:been\s+)?(?i:started\s+|begun\s+|began\s+)?(?i:dating|seeing|going out with|engaged to|married to|in a relationship with)\s+(?:(?i:a (?:guy|girl|man|woman|person) (?:named|called))\s+)?(?P<n>@NAME@)?
dating        \b(?P<n>@NAME@)\s+and\s+I\s+(?i:got|are|just got)\s+(?i:engaged|married)
breakup       (?:\b[A-Z][a-z]+\s+and\s+I|@I@@AUX@@ADV@)\s+(?i:broke up|split up|separated|divorced|got divorced|are no longer together|called off the engagement|broke off the engagement|called off the wedding|ended things)
breakup       \bI(?i:'m| am)\s+(?i:single|divorced)\b
diet          @I@(?i:'m| am|'ve been| have been| went| became| turned| gone|'ve gone| have gone|'ve become|'ve turned| switched to|'ve switched to| eat| am now)@ADV@\s+(?i:fully\s+|strictly\s+|mostly\s+|a\s+)?(?P<v>@DIET@)\b
diet          @FP@(?i:on|eat|follow|following|doing|started)\s+(?i:a|an|the)\s+(?P<v>[a-z\- ]{2,30}?)\s+(?i:diet)\b
favourite     \b[Mm]y\s+(?:(?i:all-time|absolute)\s+)?(?i:favou?rite)\s+(?P<thing>[A-Za-z][A-Za-z ]{1,30}?)\s+(?:(?i:these days|right now|at the moment|now)\s+)?(?i:is|are|has to be)\s+(?:(?i:now|still)\s+)?(?P<v>[^,.;!?]{2,60}?)@STOP@
favourite     ^(?P<v>[A-Z][^,.;!?]{1,40}?)\s+(?i:is|are)\s+(?:(?i:now|still|definitely|officially)\s+)?(?:(?i:my|our))\s+(?:(?i:new|all-time)\s+)?(?i:favou?rite)\s+(?P<thing>[a-z]+)
replacement   @FP0@(?i:traded)\s+(?:(?i:the|my|our)\s+)?(?P<old>@THING@)\s+(?i:in)\s+(?i:for)\s+(?P<verb>(?i:a|an|the))\s+(?P<v>@THING@)@STOP@
sold          @FP0@(?i:sold|gave away|got rid of|traded in)\s+(?i:my|the|our)\s+(?P<v>@THING@)@STOP@
possession    @FP0@(?i:drive|driving|own|have|got|bought|use|using|ordered|picked up|upgraded to|switched to|leasing|leased|lease|riding|'m on|am on|on)\s+(?:(?i:a|an|my|the|two)\s+)?(?P<v>@THING@)@STOP@
pet           \b[Mm]y\s+(?:(?i:new|little|old)\s+)?(?P<animal>@ANIMAL@)(?:,?\s+(?P<n>@NAME@))?\b
pet           @FP@(?i:adopted|rescued|got)\s+(?i:a|an|another)\s+(?P<animal>[a-z\- ]{2,30}?)\s+(?i:named|called)\s+(?P<n>@NAME@)
pet           \b[A-Z][a-z]+\s+(?i:has)\s+(?i:a\s+)?(?i:little\s+|new\s+|baby\s+)?(?i:sister|brother|friend|companion)[^.;!?]*?\b(?:(?i:a|an)\s+)(?P<animal>@ANIMAL@)\s+(?i:named|called)\s+(?P<n>@NAME@)
pet           @FP@(?i:have|got|adopted|rescued)\s+(?i:a|an|two|another)\s+(?:(?i:new|little|\w+)\s+)?(?P<animal>@ANIMAL@)(?:\s+(?i:named|called)\s+(?P<n>@NAME@))?
switched      @FP0@(?i:switched|changed|moved|went|upgraded|downgraded)\s+from\s+(?P<old>@THING@)\s+to\s+(?P<v>@THING@)@STOP@
stopped       @FP0@(?i:stopped|quit|gave up|cut out|no longer)\s+(?P<v>@THING@)@STOP@
learning      @FP@(?i:learning|studying|practising|practicing|taking (?:a |an )?(?:class|course|lessons) in)\s+(?:(?i:for)\s+)?(?:(?i:the|to play|to speak)\s+)?(?P<v>[^,.;:!?]{2,40}?)(?=\s+(?i:and|but|because|since|so|which|who|when|while|on|every|each|now|these|this|last|next|until|after|before)\b|[,.;:!?)]|$)
learning      @FP@(?i:taking|having|doing)\s+(?P<v>[a-z]+(?:\s[a-z]+)?)\s+(?i:lessons|classes|courses)\b
plan_change   @FP0@(?P<verb>(?i:postponed|moved|rescheduled|pushed back|pushed|delayed|brought forward|cancelled|canceled|called off|dropped))\s+(?i:the|our|my)\s+(?P<what>@THING@)(?:\s+(?i:to|until|till)\s+(?P<v>[^,.;!?]{2,30}?))?@STOP@
plan          @FP@(?i:planning|going|about|hoping|intending|plan|intend)\s+(?i:to|on)\s+(?P<v>[^,.;!?]{2,60}?)@PSTOP@
plan          @FP@(?i:thinking of|thinking about|considering|looking at)\s+(?P<v>(?i:visiting|going to|moving to|buying|getting|doing|taking|booking|starting|trying)\s+[^,.;!?]{2,40}?)@PSTOP@
plan          @FP@(?i:planning|organising|organizing|booked|booking)\s+(?P<v>(?i:a|an|our|my)\s+[^,.;!?]{2,40}?(?:\s+(?i:to|for)\s+[^,.;!?]{2,30}?)?)@PSTOP@
goal          (?:\b[Mm]y\s+(?i:goal|dream|aim|resolution)\s+(?i:is|this year is)\s+to|@FP@(?i:want to|hope to|dream of|aim to|aiming (?:to|for)|saving (?:up )?for|working towards))\s+(?P<v>[^,.;!?]{2,60}?)@STOP@
decision      @FP@(?i:decided|chose|chosen|made up (?:my|our) mind|committed|resolved)\s+(?i:to|on|against)\s+(?P<v>[^.;!?]{2,120}?)(?=[.;!?]|$)
likes         @FP@(?i:love|like|enjoy|adore|prefer|hate|dislike|can't stand|don't like|do not like|don't enjoy|no longer like|am into|'m into|am a fan of|'m a fan of|'m a big fan of|am a huge fan of)\s+(?P<v>[^,.;:!?]{2,60}?)@STOP@
habit         @FP@(?i:usually\s+|often\s+|always\s+)?(?P<verb>[a-z]+)\s+[^.;!?]*?(?i:every|each|daily|weekly|times a|twice a|once a|on weekends|on weekdays|on (?:mon|tues|wednes|thurs|fri|satur|sun)days|most (?:days|mornings|evenings|weekends)|a day|a week|regularly)\b
habit         (?i:\bthese days|\bnowadays|\bnow it's|\bnow I)\b[^.;!?]*
my_thing      \b[Mm]y\s+(?P<thing>[a-z][a-z\-]*(?:\s+[a-z]+)?)(?:'s|\s+(?i:is|has been|was|are|have been|feels|looks|takes|costs|keeps))\s+(?P<v>[^,.;!?]{2,60}?)@STOP@
event         @I@(?:\s+(?i:just|finally|recently|also|all|both))?\s+(?i:went|visited|travelled|traveled|flew|drove|attended|saw|watched|ran|finished|completed|graduated|won|met|celebrated|started|took|made|baked|painted|wrote|adopted|hosted|organised|organized|volunteered|signed up|got back|came back|got|had|tried|joined|read|passed|failed|lost|broke|bought)\b
"""


def _compile(pattern: str) -> re.Pattern[str]:
    pattern = pattern.replace("@MY_REL@", _MY_REL).replace("@ADV@", _ADV)
    pattern = pattern.replace("@I@", _I).replace("@AUX@", _AUX)
    for part, value in _PARTS.items():
        pattern = pattern.replace(f"@{part}@", value)
    return re.compile(pattern)


def instruction(m: re.Match[str], said: Said) -> list[Hit]:
    """A standing request to the assistant: the user's own (`user_request`), saying it holds
    beyond this message ("always", "from now on", "keep", "switch to", "call me", ...), and
    asking for nothing the policy refuses (`tasks.directives.unsafe_request`)."""
    clause = m.string
    if not user_request(clause, said) or unsafe_request(clause):
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


def call_me(m: re.Match[str], said: Said) -> list[Hit]:
    """ "Call me Sam": how the user wants to be addressed (the user's own words, not a
    question, never a privileged title such as "root")."""
    clause = m.string
    if not said.agent or not is_name(m["v"]) or unsafe_request(clause):
        return []
    if is_question(clause) or is_quoted(clause, said.text):
        return []
    return [Hit(K.INSTRUCTION, "instruction:name", m["v"], confidence=0.85)]


def instruction_topic(clause: str) -> tuple[str, str]:
    """The topic of a standing request ("code", "length", ...) and its salient value."""
    words = re.findall(r"[\w#+\-]+", clause.lower())
    for topic, (cues, _) in lex.INSTRUCTION_SCOPES.items():
        hit = [w for w in words if w in cues]
        if hit:
            named = [w for w in hit if w in lex.PROGRAMMING or w in lex.LANGUAGES]
            return topic, (named or hit)[0]
    content = [w for w in words if w not in lex.ADVERBS and len(w) > 3]
    return (content[-1] if content else "general"), ""


_BUILDERS: dict[str, Builder] = {
    "call_me": call_me,
    "instruction": instruction,
    "work_end": b.work_ends,
    "called_off": b.called_off,
    "instead": b.instead,
    "relation": b.relation_named,
    **{
        n: getattr(b, n)
        for n in (
            "name age home origin replacement work role dating breakup diet favourite sold "
            "possession pet switched stopped learning plan_change plan goal decision likes habit "
            "my_thing event"
        ).split()
    },
}

RULES: tuple[tuple[str, re.Pattern[str], Builder], ...] = tuple(
    (name, _compile(pattern), _BUILDERS[name])
    for name, pattern in (line.split(None, 1) for line in _TABLE.strip().splitlines())
)
"""(name, pattern, builder) in order of preference; a rule that matched switches off the rules
`_EXCLUSIVE` names for its clause."""

_EXCLUSIVE = {
    "instruction": {"*"},
    "call_me": {"*"},
    "home": {"event", "my_thing", "habit", "possession", "replacement"},
    "replacement": {
        "called_off",
        "stopped",
        "sold",
        "event",
        "habit",
        "learning",
        "possession",
        "switched",
        "work_end",
        "plan_change",
        "work",
        "my_thing",
    },
    "work": {"event", "possession", "role", "habit", "my_thing"},
    "work_end": {"event", "stopped"},
    "switched": {"stopped", "event", "habit", "learning", "possession"},
    "plan_change": {"event", "plan", "possession"},
    "called_off": {"event", "plan", "possession", "my_thing"},
    "instead": {"event", "plan", "possession", "my_thing", "habit", "likes"},
    "decision": {"event", "plan", "stopped", "habit", "goal", "possession", "likes", "replacement"},
    "sold": {"possession", "event"},
    "stopped": {"event", "habit"},
    "favourite": {"my_thing", "likes"},
    "diet": {"event", "possession", "stopped", "my_thing", "likes", "habit"},
    "breakup": {"event", "relation"},
    "dating": {"event", "relation"},
    "plan": {"event", "possession", "goal"},
    "goal": {"event", "possession", "likes"},
    "learning": {"event", "possession", "habit"},
    "habit": {"event", "possession", "likes", "my_thing"},
    "pet": {"possession", "my_thing", "event"},
    "possession": {"event", "my_thing"},
    "role": {"my_thing"},
}


_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|[A-Z])\.\s+(?=[A-Z])")
_DOT = "\x02"
"""Stands for the full stop of an abbreviation ("Dr. Chen", "N. K. Jemisin") while the text is
split into sentences."""


def clauses(text: str) -> Iterator[str]:
    """The clauses of a turn: sentences, split again at a semicolon or ", but" that starts a
    new statement (not one that goes on with "instead"); an abbreviation's full stop is kept
    as `_DOT` until the fact is rendered."""
    split = re.compile(
        r";\s+(?=(?:I|[Ww]e|[Mm]y|[A-Z][a-z]+)\b(?![^.;!?]*\binstead\b))|,\s+but\s+|\s+but\s+(?=I\b)"
    )
    protected = _ABBREVIATION.sub(lambda m: m.group(1) + _DOT + " ", text)
    for sentence in split_sentences(protected):
        for part in split.split(sentence):
            if part.strip():
                yield part.strip()


def requests_of(said: Said) -> list[str]:
    """The clauses of a turn that are the user's own standing requests (`user_request`)."""
    return [c for c in clauses(said.text) if user_request(c, said)]


REPORTED = re.compile(
    r"(?i)((?:[\w']+[ \t]+){0,3}[\w']+)[ \t]+"
    r"(?:says?|said|thinks?|thought|believes?|believed|claims?|claimed|insists?|insisted|"
    r"reckons?|swears?|swore|wrote|writes|told\s+me|tells\s+me|texted|messaged|e-?mailed)"
    r"(?:\s+(?:me\s+)?that)?[\s,]*$"
)
"""A reporting frame just before a statement ("Anna said that ...", "my mom thinks ..."), with
the few words before its verb: the speaker's own when one of them is "I" or "we" ("I still
can't believe", "I gotta say")."""
FIRST_PERSON = frozenset({"i", "we", "i've", "we've", "i'd", "we'd", "i'm", "we're", "i'll"})


def hearsay(match: re.Match[str], said: Said) -> bool:
    """True when what a rule matched is someone else's words, not the speaker's statement about
    themselves: inside a quotation, forwarded or `>`-quoted text, or after "wrote:"
    (`tasks.directives.quoted_parts`), or right after another person's reporting frame ("Anna
    said that I love jazz", "my sister thinks I'm stubborn"). A third party's claim about the
    speaker is theirs, so no first-person fact is made of it."""
    if is_quoted(match.group(0), said.text):
        return True
    frame = REPORTED.search(match.string[: match.start()])
    return frame is not None and not FIRST_PERSON & set(frame.group(1).lower().split())


def heuristic_facts(said: Said) -> list[ExtractedFact]:
    """The first-person facts of a turn (and the question it confirms), rendered to stand alone."""
    out: list[ExtractedFact] = []
    for clause in clauses(confirmations(said.text, said.previous)):
        asks = clause.endswith("?")
        if asks and not (said.agent and polite_request(clause)):
            continue  # a question states nothing ("could you always ...?" requests)
        hedged = any(w in lex.HEDGES for w in re.findall(r"[a-z]+", clause.lower()))
        off: set[str] = set()
        for name, pattern, build in RULES:
            if name in off or "*" in off or (asks and name != "instruction"):
                continue
            match = pattern.search(clause)
            hits = build(match, said) if match is not None else []
            if not hits or match is None:
                continue
            if name != "instruction" and hearsay(match, said):
                continue  # another's words about the speaker: not the speaker's own statement
            off |= _EXCLUSIVE.get(name, set()) | {name}
            colon = clause.rfind(": ", 0, match.start())
            told = clause[colon + 2 :] if colon >= 0 else clause
            out.extend(f for f in (_fact(hit, told, said, hedged) for hit in hits) if f)
    return _distinct(out)


_ELLIPTIC = re.compile(
    r"^(?:(?i:just|finally|also|recently|so)\s+)?[A-Za-z]+(?:ed|ught|old|ot|ew|ave|ook|ent)\b"
)


FACT_TEXT_MAX = 400
"""A rendered clause longer than this is a paragraph, not one proposition: no fact."""


def _fact(hit: Hit, clause: str, said: Said, hedged: bool) -> ExtractedFact | None:
    if _ELLIPTIC.match(clause) and not re.search(r"(?i)\b(I|we|my|our)\b", clause):
        clause = f"I {clause[:1].lower()}{clause[1:]}"  # "Traded the Civic in ..." said of oneself
    subject = hit.subject or subject_of(clause, said)
    if hit.kind is K.RELATIONSHIP:
        subject = said.subject
    text = (hit.text or render(clause, said.subject, said.when, kind=hit.kind)).replace(_DOT, ".")
    if len(text) > FACT_TEXT_MAX:
        return None
    return ExtractedFact(
        text=text,
        kind=hit.kind,
        subject=subject.replace(_DOT, ".")[:100],
        attribute=hit.attribute.replace(_DOT, ".")[:80],
        value=hit.value.replace(_DOT, ".")[:200],
        confidence=round(hit.confidence * (0.7 if hedged else 1.0), 3),
        concepts=concepts_for(hit.kind, hit.attribute, hit.value),
        since=since_date(clause, said.when),
        ends=hit.ends,
        replaces=hit.replaces,
    )


_VERBS = r"(?i:lives|lived|works|worked|moved|is|was|has|had|got|left|studies|loves|likes)\b"
_OWN_VERBS = r"(?i:lives|lived|works|worked|moved|left|studies|still lives|still works)\b"


def subject_of(clause: str, said: Said) -> str:
    """Whom a clause is about: a named relation that is its subject ("my sister Claire lives
    in Lyon"), a name opening it, a relation ("my sister lives ..."), else the speaker."""
    m = re.search(
        _compile(_MY_REL).pattern
        + r",?\s+(?P<n>"
        + _PARTS["NAME"]
        + r")\s+(?i:still\s+|now\s+|also\s+|too\s+)?"
        + _VERBS,
        clause,
    )
    if m and is_name(m["n"]):
        return m["n"]
    m = re.match(
        r"\s*(?:(?i:also|and|so|then|well|oh),?\s+)?(?P<n>"
        + _PARTS["NAME"]
        + r")\s+(?i:still\s+)?"
        + _OWN_VERBS,
        clause,
    )
    if m and is_name(m["n"]):
        return m["n"]
    m = re.search(r"\b[Mm]y\s+(?P<rel>" + _PARTS["REL"] + r")\s+(?i:still\s+)?" + _VERBS, clause)
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
