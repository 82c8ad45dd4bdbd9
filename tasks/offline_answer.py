"""The offline answer to a question: one sentence from the best relevant memory, said to the user
in the second person with when it was said ("On 20 October you told me that you work as a marine
biologist at the Oceanographic Institute in Brest."); for a question about a day or a period that
no memory answers by its words ("What did we talk about on January 12?"), the diary entries of
that period, else what was said in it; or a plain "I don't remember" when no memory bears on the
question.

Relevance without a model: a memory answers when its best point (a fact's own) is close in
meaning to the question (dense cosine >= `RELEVANT_COSINE`), it holds a third of the question's
content words, or it took a relevant one's place (`Candidate.replaces`); the best-ranked such
memory gives the answer. The sentence quoted is the one that holds most of the question's words,
else the one closest in meaning to it, when the caller measured that (a memory's `closeness`:
the respond node embeds the sentences), else the first. Pure functions: no I/O, no model."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memory.retrieval.ranking import coverage
from memory.schema import as_utc
from memory.text.ordering import in_time_order, is_ordering
from memory.text.sparse import token_set
from memory.text.timeparse import parse_time
from memory.write.contextual import speaker_label
from tasks.content import (
    Turn,
    bounded,
    is_question,
    without_recall_echo,
)
from tasks.knowledge_prompt import (
    fact_line,
    is_fact,
)
from tasks.second_person import fact_to_you, second_person

RELEVANT_COSINE = 0.3
"""A memory this close in meaning to the question bears on it (a starting point chosen by hand,
not fitted to a benchmark)."""

RELEVANT_COVERAGE = 0.34
"""Or: a memory holding this share of the question's content words bears on it."""

ANSWER_CHARS = 300
"""The quoted sentence is cut to this many characters."""

NOTHING = "I don't remember you telling me anything about that yet."

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|Co|Inc|Ltd|Mt|Ave|Rd|vs|etc|e\.g|i\.e|approx|No)|\b[A-Z])\.$"
)
_OPENER = re.compile(
    r"^(?:(?:also|and|so|but|well|oh|actually|anyway|btw|by the way|plus|then|okay|ok)\b,?\s+"
    r"|[^:\s]+(?:\s[^:\s]+){0,2}:\s+)",
    re.IGNORECASE,
)
_ASKS_AGENT = re.compile(
    r"\b(?:did|have|had|would|were) you\b|\byou (?:said|told|suggested|recommended|mentioned|"
    r"gave|wrote|listed|explained|described)\b",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (not split after "Dr." or an initial)."""
    out: list[str] = []
    for piece in _SENTENCE.split(text.strip()):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece.strip():
            out.append(piece.strip())
    return out


def _tidy(sentence: str) -> str:
    """A sentence without its conversational opener ("Also, ", "Big news: ")."""
    for _ in range(2):
        stripped = _OPENER.sub("", sentence, count=1)
        if stripped == sentence or len(stripped) < 8:
            break
        sentence = stripped
    return sentence


_FIRST = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|our|us)\b", re.IGNORECASE)


def when_said(then: datetime, now: datetime) -> str:
    """'Earlier today', 'Yesterday', 'On 20 October' or 'On 20 October 2024'."""
    then, now = as_utc(then), as_utc(now)
    days = (now.date() - then.date()).days
    if days <= 0:
        return "Earlier today"
    if days == 1:
        return "Yesterday"
    day = f"{then.day} {then.strftime('%B')}"
    return f"On {day}" if then.year == now.year else f"On {day} {then.year}"


def relevant(memory: dict[str, Any], question: str, *, share: float = RELEVANT_COVERAGE) -> bool:
    """True when the memory bears on the question (see the module docstring); `share` is the
    part of the question's content words it must hold without a close dense match."""
    similarity = memory.get("similarity")
    if similarity is not None and float(similarity) >= RELEVANT_COSINE:
        return True
    words = {w for w in token_set(question) if len(w) > 1}  # not the "s" of "what's"
    text = " ".join([str(memory.get("content", "")), *map(str, memory.get("fragments") or [])])
    found = coverage(words, text) if words else 0.0
    return found >= share if share > 0 else found > 0


def best_sentence(text: str, question: str, closeness: Mapping[str, float] | None = None) -> str:
    """The sentence of `text` that holds most of the question's words, the closest in meaning to
    the question on a tie (`closeness`: sentence -> cosine, when the caller measured it), else
    the first; without its conversational opener."""
    found = [s for s in sentences(text) if not is_question(s)] or sentences(text)
    if not found:
        return ""
    words = {w for w in token_set(question) if len(w) > 1}  # not the "s" of "who's"
    close = closeness or {}

    def key(s: str) -> tuple[float, bool, float, int]:
        # most of the question's words ("Where do I work?" and "I work at ..."); then a statement
        # over a greeting, a name or a thanks ("Hi! I'm Sam.", "Cheers."), whose few words say
        # little to an embedding either; among those, when no word singles one out ("Which city
        # ...?" and "A one-bedroom in Leiden, near the ..."), the meaning
        return (coverage(words, s), len(s.split()) >= 4, close.get(s, 0.0), -found.index(s))

    best = _tidy(max(found, key=key))
    return best if len(best) <= ANSWER_CHARS else best[: ANSWER_CHARS - 1].rstrip() + "…"


def memory_sides(content: str) -> list[str]:
    """The texts of a stored turn whose sentences an answer may quote: the user's side (with and
    without a `Name:` label) and the agent's."""
    user_part, _, agent_part = content.partition("\nAgent:")
    user_part = user_part.removeprefix("User:").strip()
    _, body = speaker_label(user_part)
    return [user_part, body, without_recall_echo(agent_part.strip())]


def _sentence_end(text: str) -> str:
    text = text.strip().rstrip(",;:")
    if text.endswith('"') and text[-2:-1] in (".", "!", "?", "…"):
        return text
    return text if text[-1:] in ".!?…" else f"{text}."


def answer(memory: dict[str, Any], question: str, now: datetime) -> str:
    """One sentence from `memory` that answers `question`, with when it was said."""
    created = datetime.fromisoformat(str(memory["created_at"]))
    if memory.get("kind") == "fact":
        fact = memory.get("fact") or {}
        since = fact.get("learned_at") or fact.get("valid_from")
        when = when_said(datetime.fromisoformat(str(since)) if since else created, now)
        text = fact_to_you(str(memory.get("content", "")))
        if not fact.get("current", True) and fact.get("valid_to"):
            until = when_said(datetime.fromisoformat(str(fact["valid_to"])), now).lower()
            return _sentence_end(
                f"{when} you told me that {text.rstrip('.')}; that changed {until}"
            )
        return _sentence_end(f"{when} you told me that {text}")
    when = when_said(created, now)
    content = str(memory.get("content", ""))
    user_part, _, agent_part = content.partition("\nAgent:")
    user_part = user_part.removeprefix("User:").strip()
    agent_part = without_recall_echo(agent_part.strip())
    speaker, body = speaker_label(user_part)
    if agent_part and (_ASKS_AGENT.search(question) or _asks(memory) or not body.strip()):
        # what the agent said is the answer: the user asks what it said, or said nothing
        told = best_sentence(agent_part, question, memory.get("closeness"))
        return _sentence_end(f'{when} I told you: "{told}"')
    said = best_sentence(body, question, memory.get("closeness"))
    if not said:
        return NOTHING
    if memory.get("said") == "third_party":  # another's words: quoted as they were, not as yours
        return _sentence_end(f'{when} you passed on someone else\'s words: "{said}"')
    if speaker:
        return _sentence_end(f'{when} {speaker} said: "{said}"')
    if _FIRST.search(said):
        said = second_person(said)
        return _sentence_end(f"{when} you told me that {said[:1].lower()}{said[1:]}")
    return _sentence_end(f'{when} you told me: "{said}"')


CONSIDERED = 3
"""How many of the best statements an answer about a period or an order tells (lower ones are
not trusted offline)."""


def offline_answer(memories: list[dict[str, Any]], question: str, now: datetime) -> str:
    """The answer from the best-ranked relevant memory that states something, else `NOTHING`.

    A turn in which the user only asked is no evidence of what the user said: unless the
    question asks what the agent said, its reply (perhaps an earlier wrong answer) is not
    quoted back as the answer."""
    about_agent = bool(_ASKS_AGENT.search(question))
    statements = [
        m for m in memories if m.get("kind") == "fact" or not _asks(m, strict=about_agent)
    ]
    bearing = {str(m.get("uid")) for m in statements if relevant(m, question)}
    # The best-ranked statement that bears on the question (or took the place of one that does:
    # the newest statement of its subject); a memory ranked above it that bears on nothing, a
    # greeting or a neighbour brought along, does not stop the answer.
    for memory in statements:
        if str(memory.get("uid")) in bearing or memory.get("replaces") in bearing:
            return answer(memory, question, now)
    return NOTHING


def of_period(
    memories: list[dict[str, Any]], diary: list[dict[str, Any]], question: str, now: datetime
) -> str:
    """For a question about a day or a period: the diary entries of that period (`diary`, in day
    order), else the best statements said in it, oldest first; `NOTHING` when the question names
    no period or nothing of it is held."""
    if diary:
        return " ".join(
            _sentence_end(
                f"{when_said(datetime.fromisoformat(str(e['day'])).replace(tzinfo=UTC), now)}, "
                f'my diary says: "{bounded(str(e.get("text", "")), ANSWER_CHARS)}"'
            )
            for e in diary
        )
    window = parse_time(question, now).window
    if window is None:
        return NOTHING
    inside = [
        m
        for m in memories
        if m.get("kind") != "fact"
        and not _asks(m, strict=True)
        and m.get("created_at")
        and window.start <= as_utc(datetime.fromisoformat(str(m["created_at"]))) < window.end
    ][:CONSIDERED]
    inside = [inside[i] for i in in_time_order(inside)]
    return " ".join(answer(m, question, now) for m in inside) or NOTHING


def _asks(memory: dict[str, Any], strict: bool = False) -> bool:
    """True when the memory's user side only asks something; `strict`: and the agent's side
    holds nothing either (such a memory answers nothing)."""
    content = str(memory.get("content", ""))
    user_part, _, agent_part = content.partition("\nAgent:")
    agent_part = without_recall_echo(agent_part.strip())
    asks = is_question(user_part.removeprefix("User:").strip())
    return asks and (len(agent_part) < 40 if strict else True)


def offline_answer_in_order(memories: list[dict[str, Any]], question: str, now: datetime) -> str:
    """For "what happened first / in what order": the relevant ones of the best statements,
    oldest first, each with when it was said; `NOTHING` when none bears on the question."""
    statements = [m for m in memories if m.get("kind") == "fact" or not _asks(m, strict=True)]
    # a question about several events holds each one's words only in part: one word will do
    chosen = [m for m in statements[:CONSIDERED] if relevant(m, question, share=0.0)]
    if not chosen:
        return NOTHING
    chosen = [chosen[i] for i in in_time_order(chosen)]
    if len(chosen) == 1:
        return answer(chosen[0], question, now)
    return "In the order it happened: " + " ".join(answer(m, question, now) for m in chosen)


def because(belief: dict[str, Any]) -> str:
    """Why the agent holds a belief, in words: its strongest evidence and when it was shown."""
    evidence = belief.get("evidence") or []
    if not evidence:
        return ""
    e = evidence[0]
    return (
        f", because of what you showed me on {str(e.get('created_at', ''))[:10]} "
        f'("{bounded(str(e.get("user_text", "")), 160)}")'
    )


_QUESTION = re.compile(
    r"\?\s*$|^(who|what|when|where|which|why|how|do|does|did|is|are|was|were|can|could|tell me|"
    r"remind me|recall|list|show me|summari[sz]e)\b|\b(do you remember|remind me)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b", re.I)


def greeting(part_of_day: str) -> str:
    """A greeting that fits the part of the day."""
    if "morning" in part_of_day:
        return "Good morning!"
    if "afternoon" in part_of_day:
        return "Good afternoon!"
    if part_of_day == "evening":
        return "Good evening!"
    if "night" in part_of_day:
        return "Hello! You're up late."
    return "Hello!"


def plain_answer(
    turn: Turn,
    memories: list[dict[str, Any]],
    beliefs: list[dict[str, Any]],
    temporal: dict[str, Any],
    now: datetime,
    remembered: bool = True,
    diary: list[dict[str, Any]] | None = None,
) -> str:
    """The reply without a language model: what memory holds, said plainly; `diary`, the entries
    of the period the message names (`memory.retrieval.diary`)."""
    text = str(turn.get("text", ""))
    if turn.get("empty"):
        if turn.get("dropped_parts"):
            kinds = ", ".join(sorted(set(turn["dropped_parts"])))
            return f"I can only read text, and your message had none (only: {kinds})."
        return "Your message was empty. What would you like to talk about?"
    if beliefs:
        views = "; ".join(f"{b['statement']}{because(b)}" for b in beliefs[:3])
        return f"Here is where I stand so far: {views}."
    short_greeting = _GREETING.match(text) and len(text) < 40
    if short_greeting:
        return f"{greeting(str(temporal.get('part_of_day', '')))} What's on your mind?"
    if not _QUESTION.search(text.strip()):
        # The user is telling, not asking: acknowledge rather than recite memories.
        hello = "Hello! " if _GREETING.match(text) else ""
        return (
            f"{hello}Thanks, I'll remember that."
            if remembered
            else f"{hello}Thanks for telling me."
        )
    if is_ordering(text):  # the best statements, told oldest first with their dates
        return offline_answer_in_order(memories, text, now)
    found = offline_answer(memories, text, now)
    return found if found != NOTHING else of_period(memories, diary or [], text, now)


def memory_line(memory: dict[str, Any]) -> str:
    """The line of a memory worth quoting: a fact (marked when it no longer holds), its best
    fragment, else what the user said."""
    if is_fact(memory):
        return fact_line(memory)
    fragments = memory.get("fragments") or []
    if fragments:
        return str(fragments[0])
    content = str(memory.get("content", ""))
    first = content.split("\nAgent:", 1)[0]
    return first.removeprefix("User: ").strip()
