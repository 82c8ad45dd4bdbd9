"""The diary: one short first-person entry per UTC day with conversation, written at the daily
sleep level (docs/adr/0087-diary.md).

Offline the entry is templated from the day itself, nothing invented: how many conversations
and exchanges, the topics and names that came up in two or more of the day's turns (as the user
wrote them), the concepts that came back that day (with their narrative loop), the most salient
thing the user told (quoted; a statement before a question), the facts learned that day (as
sentences) and the beliefs that day's turns were evidence for. An entry RECOUNTS the day's turns.

Written for every day up to the run's day that has turns and either no entry or an entry made
from a different number of turns (a day still going on, or one that lost a turn: forgetting and
deletion delete the entry of a turn's day through `memory.sleep.concepts.release_episode`, and it is
rewritten here from what remains). Deterministic: the same turns give the same text, so
re-running the same day writes nothing. With an LLM, `tasks.diary_writing` writes the entry
from the offline one and the day's turns (one call per entry written, the offline text as its
fallback); an entry already written is not rewritten. No prompts here.

The text quotes the user: whoever puts it in a prompt fences it as data.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from memory.beliefs.evidence import list_active_beliefs
from memory.schema import DiaryEntry, Episode, EpisodeStatus, as_utc, stable_uid
from memory.sleep.concepts import day_of

if TYPE_CHECKING:
    from memory.services import Services

DAY_TERMS = 3
"""Topics and names said to be what a day was about."""
QUOTE = 120
"""Characters of the day's most salient turn quoted."""
MAX_FACTS = 3
"""Facts learned that day named in the entry."""

_SCAN = 1_000_000

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total), as `memory.sleep.levels.Progress`."""

Writer = Callable[[date, str, Sequence[str]], Awaitable[str]]
"""write(day, the offline entry, the day's turns in time order) -> the entry's text."""


@dataclass(slots=True)
class Written:
    """What one diary pass did."""

    days: int = 0
    written: int = 0

    def note(self) -> str:
        """One line for the consolidation report."""
        return f"diary: {self.written} of {self.days} days written"


def diary_uid(tenant: str, day: date) -> str:
    """The uid of the tenant's entry for a day."""
    return stable_uid(tenant, "diary", day.isoformat())


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


_COUNTS = {1: "once", 2: "twice"}
_NUMBERS = "zero one two three four five six seven eight nine ten".split()


def _as_said(term: str, turns: list[Episode]) -> str:
    """A topic or name as the user wrote it ('Brest', not 'brest'), else as stored."""
    words = term.replace("-", " ")
    pattern = re.compile(rf"\b{re.escape(words)}\b", re.IGNORECASE)
    for e in turns:
        found = pattern.search(e.user_text)
        if found:
            return found.group(0)
    return words


def _sentence(text: str) -> str:
    """`text` as one sentence: stripped, ending in exactly one full stop (or its own ! or ?)."""
    text = " ".join(text.split()).rstrip(" .")
    return text if text.endswith(("!", "?")) else text + "."


def compose(
    day: date,
    turns: list[Episode],
    terms: dict[str, list[str]],
    concepts: list[tuple[str, int, str]],
    learned: list[str],
    beliefs: list[str],
) -> str:
    """The entry's text. `concepts` are (label, days it has come up on so far, loop).

    A day is said to be "mostly about" only the topics and names that came up in two or more of
    its turns (a word said once is not what a day was about), written as the user wrote them.
    """
    n = len(turns)
    threads = len({e.thread_id for e in turns})
    talked = _COUNTS.get(threads, f"{threads} times")
    exchanges = f" ({n} exchanges)." if n > threads else "."
    parts = [f"{day:%A %d %B %Y}. We talked {talked}{exchanges}"]
    counts = Counter(t for e in turns for t in dict.fromkeys(terms.get(e.uid, [])))
    recurring = [t for t in counts if counts[t] >= 2]
    top = sorted(recurring, key=lambda t: (-counts[t], t))[:DAY_TERMS]
    if top:
        parts.append(f"It was mostly about {_and([_as_said(t, turns) for t in top])}.")
    for label, days, loop in concepts:
        again = f"We came back to {label} ({_ordinal(days)} day it came up"
        parts.append(again + (f"; it tends to come up on {loop}s)." if loop else ")."))
    # What stayed is something the user told, before something they asked.
    salient = max(
        turns,
        key=lambda e: (not e.user_text.rstrip().endswith("?"), e.salience, len(e.user_text), e.uid),
    )
    quote = " ".join(salient.user_text.split())
    if quote:
        cut = quote if len(quote) <= QUOTE else quote[: QUOTE - 3].rstrip() + "..."
        parts.append(f'What stayed with me: "{cut}"')
    if learned:
        kept = learned[:MAX_FACTS]
        many = _NUMBERS[len(kept)] if len(kept) < len(_NUMBERS) else str(len(kept))
        things = "one thing" if len(kept) == 1 else f"{many} things"
        parts.append(f"I learned {things}: " + " ".join(_sentence(f) for f in kept))
    if beliefs:
        parts.append(f"It gave me more to think about on {_and(beliefs)}.")
    return " ".join(parts)


async def _days_concepts(
    services: Services, tenant: str
) -> dict[str, list[tuple[str, list[date], str]]]:
    """Episode uid -> (label, member days, loop) of each concept including it."""
    graph = services.graph
    out: dict[str, list[tuple[str, list[date], str]]] = defaultdict(list)
    for concept in await graph.concepts.list(tenant):
        members = await graph.concepts.members(tenant, concept.uid)
        episodes = await graph.episodes.get_many(tenant, members.episodes)
        days = sorted({day_of(e) for e in episodes})
        for e in episodes:
            out[e.uid].append((concept.label, days, concept.loop))
    return out


async def write_diary(
    services: Services,
    tenant: str,
    now: datetime,
    progress: Progress | None = None,
    write: Writer | None = None,
) -> Written:
    """Write the entries of days up to `now`'s day that have none or an outdated one (by
    `write`, the LLM, when given: one call per entry written; the offline text otherwise)."""
    graph = services.graph
    statuses = [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    found = await graph.episodes.list_by_status(tenant, statuses, limit=_SCAN)
    last_day = as_utc(now).date()
    by_day: dict[date, list[Episode]] = defaultdict(list)
    for e in sorted(found, key=lambda e: (as_utc(e.created_at), e.uid)):
        if day_of(e) <= last_day:
            by_day[day_of(e)].append(e)
    existing = {entry.uid: entry for entry in await graph.diary.list(tenant)}
    due = [
        d
        for d in sorted(by_day)
        if (old := existing.get(diary_uid(tenant, d))) is None
        or old.episode_count != len(by_day[d])
    ]
    done = Written(days=len(by_day))
    if not due:
        return done
    concepts_of = await _days_concepts(services, tenant)
    facts = await graph.facts.list(tenant)
    beliefs = await list_active_beliefs(graph, tenant)
    evidence = {b.topic: await graph.beliefs.evidence(tenant, b.uid, _SCAN) for b in beliefs}
    for n, d in enumerate(due, start=1):
        turns = by_day[d]
        uids = {e.uid for e in turns}
        terms = await graph.episodes.terms(tenant, sorted(uids))
        seen: dict[str, tuple[int, str]] = {}
        for e in turns:
            for label, days, loop in concepts_of.get(e.uid, []):
                seen[label] = (sum(1 for x in days if x <= d), loop)
        concepts = [(label, n, loop) for label, (n, loop) in sorted(seen.items()) if n >= 2]
        learned = [
            f.text for f in facts if f.learned_at is not None and as_utc(f.learned_at).date() == d
        ]
        moved = sorted(t for t, ev in evidence.items() if any(v.episode_uid in uids for v in ev))
        text = compose(d, turns, terms, concepts, learned, moved)
        if write is not None:
            text = await write(d, text, [e.user_text for e in turns])
        entry = DiaryEntry(
            uid=diary_uid(tenant, d),
            tenant=tenant,
            day=d.isoformat(),
            text=text,
            episode_count=len(turns),
            concepts=tuple(label for label, _, _ in concepts),
            created_at=as_utc(now),
        )
        await graph.diary.put(entry, sorted(uids))
        done.written += 1
        if progress and (n % 20 == 0 or n == len(due)):
            progress("diary", n, len(due))
    return done


__all__ = ["Writer", "Written", "compose", "diary_uid", "write_diary"]
