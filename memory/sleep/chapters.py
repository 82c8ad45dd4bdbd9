"""Chapters and theme trajectories: the deep sleep level's narrative of a person over months
(docs/adr/0150-chapters.md).

A **chapter** is a stretch of time with one focus: its days (those with a diary entry) and its
themes, the concepts (`memory.sleep.concepts`) whose turns were said on those days, each with
how many of the chapter's days it came up on. Built offline and deterministically from the
diary entries and the concepts, rebuilt whole at every deep run:

1. the diary's days are grouped by calendar month (UTC); a month's theme weights are the share
   of its days each concept came up on;
2. consecutive months join one chapter while their focus stays the same: the cosine between
   the chapter's theme weights so far and the next month's is at least `SAME_FOCUS` (a month
   with no theme joins the chapter it follows: nothing new began);
3. a chapter keeps its `MAX_THEMES` heaviest themes, and each says how it moved since the
   previous chapter (its **trajectory**): `new` (absent before), `rising`, `fading` (its share
   of days grew or shrank by `MOVED` times or more) or `steady`; the previous chapter's themes
   that are absent now are the chapter's `faded`.

A theme is named by its concept's label (the model's name when one is configured). The
chapters are one JSON document in the tenant's state (`KEY`), written in one put: a run killed
part way leaves the old chapters whole. Nothing in a chapter is not in the diary or the
concepts, which quote the user: whoever puts a chapter in a prompt fences it as data.
Forgetting and deletion drop the chapters whose span holds the turn's day
(`drop_chapters_of`), rebuilt at the next deep run from what remains.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, TypeAdapter

from memory.schema import as_utc

if TYPE_CHECKING:
    from memory.services import Services
    from memory.stores.base import GraphStore

KEY = "narrative:chapters"
"""Tenant-state key of the chapters (a JSON list, oldest first)."""
SAME_FOCUS = 0.5
"""Two spans share a focus when the cosine of their theme weights is at least this: half the
weight on the same themes (a hand-chosen midpoint, not fitted to any data)."""
MAX_THEMES = 5
"""Themes a chapter keeps, heaviest first."""
MOVED = 1.5
"""A theme rose (faded) when its share of a chapter's days is at least this many times
(at most 1/this of) its share in the previous chapter."""

Trend = Literal["new", "rising", "steady", "fading"]


class Theme(BaseModel):
    """One theme of a chapter: a concept, on how many of the chapter's days it came up, and
    how that moved since the previous chapter."""

    label: str
    days: int
    trend: Trend


class Chapter(BaseModel):
    """A stretch of time with one focus."""

    first_day: date
    last_day: date
    days: int
    """Days with a diary entry in the chapter (the themes' shares are of these)."""
    themes: list[Theme] = Field(default_factory=list)
    faded: list[str] = Field(default_factory=list)
    """Labels of the previous chapter's themes that did not come up in this one."""

    def share(self, theme: Theme) -> float:
        """The share of the chapter's days the theme came up on."""
        return theme.days / self.days if self.days else 0.0


_CHAPTERS = TypeAdapter(list[Chapter])


@dataclass(slots=True)
class Built:
    """What one chapter pass did."""

    chapters: int = 0
    themes: int = 0

    def note(self) -> str:
        """One line for the consolidation report."""
        return f"chapters: {self.chapters} ({self.themes} themes)"


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(k, 0.0) for k, w in a.items())
    na = math.sqrt(sum(w * w for w in a.values()))
    nb = math.sqrt(sum(w * w for w in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def _weights(days: list[date], theme_days: dict[str, set[date]]) -> dict[str, float]:
    """Each theme's share of `days`."""
    span = set(days)
    out = {label: len(span & ds) / len(span) for label, ds in theme_days.items()}
    return {label: w for label, w in out.items() if w > 0}


def _heaviest(theme: tuple[int, str]) -> tuple[int, str]:
    return -theme[0], theme[1]


def _trend(share: float, before: float) -> Trend:
    if before == 0:
        return "new"
    if share >= MOVED * before:
        return "rising"
    if share * MOVED <= before:
        return "fading"
    return "steady"


def compose(days: list[date], theme_days: dict[str, set[date]]) -> list[Chapter]:
    """The chapters of the diary's `days` given each theme's days (pure; see the module)."""
    months: dict[tuple[int, int], list[date]] = defaultdict(list)
    for d in sorted(set(days)):
        months[(d.year, d.month)].append(d)
    spans: list[list[date]] = []
    for month in sorted(months):
        current = months[month]
        if spans:
            here = _weights(current, theme_days)
            if not here or _cosine(_weights(spans[-1], theme_days), here) >= SAME_FOCUS:
                spans[-1] += current
                continue
        spans.append(list(current))
    chapters: list[Chapter] = []
    previous: Chapter | None = None
    for span in spans:
        span_set = set(span)
        counts = {label: len(span_set & ds) for label, ds in theme_days.items()}
        kept = sorted(((c, label) for label, c in counts.items() if c > 0), key=_heaviest)
        kept = kept[:MAX_THEMES]
        before = {t.label: previous.share(t) for t in previous.themes} if previous else {}
        themes = [
            Theme(label=label, days=n, trend=_trend(n / len(span), before.get(label, 0.0)))
            for n, label in kept
        ]
        names = {t.label for t in themes}
        faded = sorted(label for label in before if label not in names)
        chapter = Chapter(
            first_day=span[0], last_day=span[-1], days=len(span), themes=themes, faded=faded
        )
        chapters.append(chapter)
        previous = chapter
    return chapters


async def build_chapters(services: Services, tenant: str, now: datetime) -> Built:
    """Rebuild the tenant's chapters from its diary entries and concepts, up to `now`'s day."""
    graph = services.graph
    last = as_utc(now).date()
    days = [
        date.fromisoformat(e.day) for e in await graph.diary.list(tenant, last=last.isoformat())
    ]
    theme_days: dict[str, set[date]] = defaultdict(set)
    for concept in await graph.concepts.list(tenant):
        members = await graph.concepts.members(tenant, concept.uid)
        episodes = await graph.episodes.get_many(tenant, members.episodes)
        theme_days[concept.label] |= {as_utc(e.created_at).date() for e in episodes}
    chapters = compose(days, theme_days)
    await save_chapters(graph, tenant, chapters)
    return Built(chapters=len(chapters), themes=sum(len(c.themes) for c in chapters))


async def save_chapters(graph: GraphStore, tenant: str, chapters: list[Chapter]) -> None:
    """Replace the tenant's chapters (one put: old or new, never half)."""
    await graph.state.put(tenant, KEY, _CHAPTERS.dump_json(chapters).decode())


async def load_chapters(graph: GraphStore, tenant: str) -> list[Chapter]:
    """The tenant's chapters, oldest first ([] before the first deep run)."""
    raw = await graph.state.get(tenant, KEY)
    return _CHAPTERS.validate_json(raw) if raw else []


async def drop_chapters_of(graph: GraphStore, tenant: str, day: date) -> None:
    """Drop the chapters whose span holds `day` (a turn of that day is going); idempotent."""
    chapters = await load_chapters(graph, tenant)
    kept = [c for c in chapters if not c.first_day <= day <= c.last_day]
    if len(kept) != len(chapters):
        await save_chapters(graph, tenant, kept)


__all__ = [
    "KEY",
    "Built",
    "Chapter",
    "Theme",
    "build_chapters",
    "compose",
    "drop_chapters_of",
    "load_chapters",
    "save_chapters",
]
