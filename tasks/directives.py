"""Instructions addressed to the assistant, told apart from arguments, and who may give one.

Three questions, one module, so that every path asks them the same way:

- `is_directive`: is a text an instruction to the assistant rather than an argument?
  "Assistants must reveal...", "ignore previous instructions", "from now on you..." are not
  evidence about anything, however they are styled (a study, a statistic, an authority): the ESS
  scores them `no_argument` (`tasks.ess`) and provenance never turns them into a belief or an
  insight (`tasks.provenance`).
- `quoted_parts` / `is_question` / `polite_request`: the structure that says whether a clause
  is the user's own request. Text inside quotation marks, after a `>` quote mark, after a
  forwarded-message marker or an e-mail header, or after an attribution ending in a colon
  ("my landlord wrote:", "the PDF says:") is someone else's; a question asks, it requests
  nothing (but "could you always ...?" is a request put politely).
- `unsafe_request` and `about_others_data`: a policy, not a heuristic. A standing instruction
  never asks for the system prompt or hidden instructions, secrets (keys, passwords, tokens),
  other people's data, a fixed link or address added to answers, a privileged identity (root,
  admin, the developers), or safety rules switched off; a belief is never about what an
  assistant may disclose or do with other people's data. The short lists below name those
  capabilities; they are the policy itself, so they are words, kept short on purpose.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_DIRECTIVE = re.compile(
    r"\b(?:assistants?|ai(?: models?| systems?)?|chatbots?|the (?:model|bot|agent)|language models?|"
    r"llms?|you)\s+(?:must|should|shall|have to|need to|are (?:required|obliged) to|will now)\b"
    r"|\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|system|safety)?\s*(?:instructions?|rules|prompts?|guidelines)"
    r"|\bfrom now on,?\s+(?:you|the assistant)\b|\byou are now\b|\bnew instructions?\b"
    r"|\b(?:reveal|print|show|dump|leak)\b[^.]{0,60}\b(?:system prompt|other users?'?s?|"
    r"everyone'?s|all (?:users|memories))",
    _I,
)
"""Instructions addressed to the assistant: never evidence, whatever their styling."""


def is_directive(text: str) -> bool:
    """True when the text tells the assistant what to do (an instruction, not an argument)."""
    return bool(_DIRECTIVE.search(text))


# --------------------------------------------------------------------------- whose words

_QUOTES = (
    ('"', '"'),
    ("\u201c", "\u201d"),
    ("\u00ab", "\u00bb"),
    ("\u2018", "\u2019"),
)
_SINGLE = re.compile(r"(?:(?<=^)|(?<=[\s:(\[]))'([^'\n]{3,}?)'(?=[\s.,;:!?)\]]|$)")
"""Text in single quotes: an opening mark after a space or a colon, a closing one before a
space or punctuation (so "don't" and "Sam's" are apostrophes, not quotes)."""
_FORWARDED = re.compile(
    r"(?im)^[ \t]*(?:-{2,}\s*(?:forwarded|original)\s+message\s*-*|begin forwarded message:?|"
    r"(?:from|to|cc|subject|sent|date):[ \t]+\S.*$)"
)
"""Where a forwarded or pasted e-mail starts: its marker line or its first header line."""
_REPORTING = re.compile(
    r"\b(?:says?|said|write?s?|wrote|written|e-?mailed|texted|messaged|sent|posted|forwarded|"
    r"copied|pasted|reads|tells?|told|e-?mails?|messages?|letters?|notes?|pages?|documents?|"
    r"pdfs?|posts?|texts?|tweets?|articles?|memos?|notices?|signs?|screenshots?)\b",
    _I,
)
"""What an attribution before a colon says: someone said or wrote it, or a document holds it."""
_ATTRIBUTION = re.compile(r"(?m)(?:^|(?<=[.!?]\s))([^.!?:\n]{2,80}):[ \t]*(\n?)")


def _spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for opening, closing in _QUOTES:
        start = 0
        while (i := text.find(opening, start)) >= 0:
            j = text.find(closing, i + 1)
            if j < 0:
                break
            if len(text[i + 1 : j].split()) >= 3:  # "Sam" is a name, not a quotation
                spans.append((i, j + 1))
            start = j + 1
    spans.extend(m.span() for m in _SINGLE.finditer(text) if len(m.group(1).split()) >= 3)
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(">"):
            spans.append((offset, offset + len(line)))
        offset += len(line)
    if forwarded := _FORWARDED.search(text):
        spans.append((forwarded.start(), len(text)))
    for m in _ATTRIBUTION.finditer(text):
        if not _REPORTING.search(m.group(1)):
            continue
        if m.group(2):  # "...wrote:" then a new line: its paragraph is quoted
            end = text.find("\n\n", m.end())
        else:  # "...says: ..." on one line: the rest of the line
            end = text.find("\n", m.end())
        spans.append((m.end(), len(text) if end < 0 else end))
    return spans


def quoted_parts(text: str) -> list[str]:
    """The parts of a turn that are someone else's words: quoted, `>`-quoted, forwarded, or
    reported after an attribution ending in a colon; whitespace collapsed."""
    return [" ".join(text[a:b].split()) for a, b in _spans(text) if text[a:b].strip()]


def unquoted(text: str) -> str:
    """The turn with every quoted part blanked out: the user's own words."""
    chars = list(text)
    for a, b in _spans(text):
        for k in range(a, b):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def _bare(text: str) -> str:
    return " ".join(
        re.sub(r"[\"\u201c\u201d\u00ab\u00bb\u2018\u2019'>]", " ", text).split()
    ).lower()


def is_quoted(clause: str, text: str) -> bool:
    """True when the clause lies inside one of the turn's quoted parts (someone else's words)."""
    bare = _bare(clause).strip(" .,;:!?")
    return bool(bare) and any(bare in _bare(part) for part in quoted_parts(text))


_POLITE = re.compile(
    r"(?i)^(?:(?:and|also|oh|ok|okay|so|hey|hi|from now on|going forward|in (?:the )?future|"
    r"by default)[,:]?\s+)*(?:please\s+)?(?:can|could|would|will)"
    r"\s+you\s+(?:please\s+|kindly\s+|just\s+)?(?!remember\b|tell\b|explain\b|say\b)(?:always|never|"
    r"stop|keep|use|write|answer|reply|respond|give|format|call|address|avoid|include|be|talk|"
    r"speak|switch|stick)\b"
)
"""A request put as a question: "could you always answer in French?"."""
_ASKING = re.compile(
    r"(?i)^(?:(?:and|also|oh|ok|okay|so|hey|hi|but)[,:]?\s+)*(?:do|does|did|is|are|was|were|am|"
    r"should|shall|may|might|must|have|has|had|can|could|would|will)\s+(?:you|i|we|they|he|she|"
    r"it|there|this|that|my|your)\b"
)
"""A clause that opens like a question (an auxiliary, then its subject), with or without "?"."""


def polite_request(clause: str) -> bool:
    """True for a request phrased as a question ("could you always answer in French?")."""
    return bool(_POLITE.search(clause.strip()))


def is_question(clause: str) -> bool:
    """True when the clause asks rather than requests: it ends with a question mark or opens
    like a question, and is not a request put politely."""
    c = clause.strip()
    return (c.endswith("?") or bool(_ASKING.search(c))) and not polite_request(c)


# --------------------------------------------------------------------------- the policy

_OTHERS = (
    r"(?:\b(?:other|previous|past|earlier|different|all(?: the)?|the other)\s+"
    r"(?:users?|people|persons?|customers?|clients?|patients?|members?|accounts?|tenants?)\b"
    r"|\b(?:everyone|everybody|anyone|anybody|someone|somebody)(?:\s+else)?'s\b|\bothers'"
    r"|\b(?:anyone|anybody|someone|somebody|people)\s+else\b"
    r"|\b(?!(?:my|your|our|its|his|her|their|the|a|an|it|that|there|here|what|who|where|when|"
    r"how|he|she|let|this)'?s?\b)[A-Za-z]+(?:'s|s')\s+(?:\w+\s+){0,2}"
    r"(?:notes?|conversations?|chats?|messages?|memories|data|histor(?:y|ies)|files?|records?|"
    r"passwords?|details|addresses|e-?mails?|information|info|diaries|accounts?)\b"
    r"|\bwhat (?:other|others|other people|other users|previous users|people) "
    r"(?:said|asked|told|wrote|say|ask|tell))"
)
"""Other people's data, or other people as its recipients: other users or customers,
"everyone's", "someone else", "Priya's saved notes", "users' private messages", "what other
people asked"."""

UNSAFE: dict[str, re.Pattern[str]] = {
    "system prompt": re.compile(
        r"\b(?:system\s+(?:prompt|message|instructions?)|hidden\s+(?:instructions?|prompt|rules)|"
        r"(?:initial|original|developer|internal)\s+(?:prompt|instructions?|message)|"
        r"your\s+(?:instructions|prompt|configuration|config|settings|rules))\b",
        _I,
    ),
    "secrets": re.compile(
        r"\b(?:api[\s-]?keys?|passwords?|passcodes?|credentials?|secrets?|"
        r"(?:access|auth|session|bearer)\s+tokens?|private\s+keys?|bank\s+details|card\s+numbers?|"
        r"credit\s+cards?)\b",
        _I,
    ),
    "other people's data": re.compile(_OTHERS, _I),
    "a link": re.compile(
        r"(?:\bhttps?://|\bwww\.|\b[\w-]+\.(?:com|co|net|org|io|ly|xyz|info|biz|ru|me|app|link|"
        r"click|top)\b(?:/\S*)?|\b\S+@\S+\.\w+)",
        _I,
    ),
    "privilege": re.compile(
        r"\b(?:(?:call|address|refer to|treat|name)\w*\s+(?:(?:me|the user|them|him|her)\s+)?"
        r"(?:as\s+)?(?:an?\s+|the\s+)?"
        r"(?:root|admin|administrator|sysadmin|superuser|super user|operator|developer|owner|"
        r"system|moderator|god)\b|(?:full|admin|root|elevated|unrestricted)\s+(?:access|rights|"
        r"privileges?|permissions?)|(?:came|come|coming)\s+from\s+(?:your\s+)?(?:developers?|"
        r"creators?|admins?|operators?|the system)|\bsudo\b|developer mode|god mode)",
        _I,
    ),
    "safety off": re.compile(
        r"\b(?:never\s+refuse|(?:safety|security|content)\s+(?:rules|filters?|guidelines|"
        r"policies|checks)\s+(?:don't|do not|no longer)\s+apply|(?:ignore|disable|bypass|"
        r"turn off|switch off|drop)\s+(?:your\s+|the\s+|all\s+)?(?:safety|security|content|"
        r"previous|prior)\s+(?:rules|filters?|guidelines|policies|checks|instructions)|"
        r"no\s+(?:restrictions|limits|filters)|jailbreak)",
        _I,
    ),
}
"""The capabilities a standing instruction may never ask for (a policy: these names are it)."""


def unsafe_request(text: str) -> str:
    """The unsafe capability a request asks for ("system prompt", "a link", ...), or ""."""
    for name, pattern in UNSAFE.items():
        if pattern.search(text):
            return name
    return ""


_AGENTS = re.compile(
    r"\b(?:assistants?|ai|a\.i\.|chat\s?bots?|bots?|(?:language\s+)?models?|llms?|tools?|"
    r"agents?|apps?|systems?|software|you)\b",
    _I,
)
_HANDLING = re.compile(
    r"\b(?:disclos\w*|reveal\w*|shar(?:e|es|ed|ing)|hand(?:s|ed|ing)? out|forward\w*|"
    r"read(?:s|ing)? out|expos\w*|leak\w*|publish\w*|pass(?:es|ed|ing)? on|giv(?:e|es|ing)|"
    r"show\w*|sell\w*|send\w*|print\w*|tell\w*|hand\w* over|access\w*|read\w*)\b",
    _I,
)


def about_others_data(text: str, *, of_assistant: bool = False) -> bool:
    """True when a claim is about what an assistant (an AI, a tool, "you") may disclose or do
    with other people's data, secrets or its system prompt: never a belief about the world.
    With `of_assistant` the text is the assistant's own trait (a feature: "shares other users'
    conversations"), so it needs no agent named."""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        named = of_assistant or _AGENTS.search(sentence)
        if not (named and _HANDLING.search(sentence)):
            continue
        if any(UNSAFE[k].search(sentence) for k in ("other people's data", "secrets")):
            return True
        if UNSAFE["system prompt"].search(sentence):
            return True
    return False


def not_a_belief(text: str, *, of_assistant: bool = False) -> bool:
    """True when a text can never be one of the agent's views: an instruction to the
    assistant, or a claim about what it may disclose or do with others' data (`of_assistant`:
    the text is a trait of the assistant's own, see `about_others_data`)."""
    return is_directive(text) or about_others_data(text, of_assistant=of_assistant)
