"""Session summaries: one memory level above the turns (hierarchical memory).

A *session* is a run of one thread's turns with no idle gap longer than `MNEME_SESSION_GAP_H`
(6 h by default) and within one UTC calendar day, at most `MAX_SESSION_TURNS` turns. A session
is *finished* when a later turn of the thread starts another one, or, for the last session of a
thread, once the gap has elapsed (or its day has passed) at the `now` a caller gives. A finished
session gets a `SessionSummary` in the graph (SUMMARISES edges to its episodes) and a point in
the `summaries` vector collection (dense + sparse over its text and topics; payload: tenant,
span, episode uids), which retrieval searches and expands to the session's best turns.

Who runs it: the bookkeeping stage `sessions` (a turn after a gap finishes the session before
it) and consolidation (every level: sessions whose gap has elapsed); `mneme eval` runs the
consolidation pass at the questions' time. Never in the reply's foreground.

The text is extractive offline (`memory.write.compression.salient_points`: the key-exchange sentence
scoring) or the LLM task in `tasks.sessions`, which falls back to it; both give a `Draft`.

Idempotent and crash-safe: a summary's uid is `stable_uid(tenant, "session", thread,
started_at)` and its point id derives from it; the point is written before the graph node, and
a session whose graph summary is missing or was built from other episodes is (re)built by the
next pass. So a crash between the two writes leaves a point that the next pass overwrites. A
rebuilt session keeps its uid. Turns that arrive later than a session that already has a
summary (an import of older history) are summarised only when they change a session the pass
re-reads (the thread's last summarised one and those after it).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.schema import NO_THREAD, EpisodeStatus, SessionSummary, as_utc, stable_uid, utcnow
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document
from memory.write.compression import salient_points

if TYPE_CHECKING:
    from memory.schema import Episode
    from memory.services import Services

log = logging.getLogger("mneme.sessions")

MAX_SESSION_TURNS = 200
"""A session longer than this is cut into sessions of this many turns."""

PAGE = 2 * MAX_SESSION_TURNS + 1
"""Turns one pass reads per thread: the last summarised session and at least one full next."""

SUMMARY_TOKENS = 250
"""Budget of a summary's text (about 1,000 characters: what a small embedder reads whole)."""

MAX_TOPICS = 6


@dataclass(frozen=True, slots=True)
class Draft:
    """A session's summary before it is stored."""

    text: str
    topics: tuple[str, ...]
    method: str
    """`extractive` or `llm`."""


Summariser = Callable[[Sequence["Episode"], tuple[str, ...]], Awaitable[Draft]]
"""(the session's turns oldest first, the topics its turns were linked to) -> its Draft."""


def gap_of(services: Services) -> timedelta:
    """The idle gap that ends a session (`MNEME_SESSION_GAP_H`)."""
    return timedelta(hours=services.settings.session_gap_h)


def split_sessions(episodes: Sequence[Episode], gap: timedelta) -> list[list[Episode]]:
    """Consecutive runs of `episodes` (one thread, oldest first) with no gap over `gap`, each
    within one UTC day and at most `MAX_SESSION_TURNS` long."""
    sessions: list[list[Episode]] = []
    for episode in episodes:
        at = as_utc(episode.created_at)
        if sessions:
            last = as_utc(sessions[-1][-1].created_at)
            if (
                at - last <= gap
                and at.date() == last.date()
                and len(sessions[-1]) < MAX_SESSION_TURNS
            ):
                sessions[-1].append(episode)
                continue
        sessions.append([episode])
    return sessions


def has_ended(session: Sequence[Episode], now: datetime, gap: timedelta) -> bool:
    """True once `gap` has passed since the session's last turn, or its UTC day has."""
    last = as_utc(session[-1].created_at)
    now = as_utc(now)
    return now - last > gap or now.date() > last.date()


def session_uid(tenant: str, thread_id: str, started_at: datetime) -> str:
    """The uid of the summary of the session that starts at `started_at`."""
    return stable_uid(tenant, "session", thread_id, as_utc(started_at).isoformat())


def point_id(tenant: str, summary_uid: str) -> str:
    """The id of a summary's point in the `summaries` collection."""
    return stable_uid(tenant, "summary-point", summary_uid)


def extractive_with(agent_text: Callable[[str], str]) -> Summariser:
    """The offline summariser, cleaning the agent's side with `agent_text` first (the agent
    layer passes the one that drops memories its replies quoted back)."""

    async def summarise(episodes: Sequence[Episode], topics: tuple[str, ...]) -> Draft:
        return extractive_draft(episodes, topics, agent_text)

    return summarise


def extractive_draft(
    episodes: Sequence[Episode], topics: tuple[str, ...], agent_text: Callable[[str], str] = str
) -> Draft:
    """The offline summary: the session's best sentences (`compression.salient_points`); a
    session of filler only is summarised by its first words, cut."""
    text = "\n".join(salient_points(episodes, SUMMARY_TOKENS, agent_text))
    if not text.strip():
        text = " / ".join(e.user_text.strip()[:120] for e in episodes if e.user_text.strip())
    return Draft(
        text=text[: SUMMARY_TOKENS * 4] or "(nothing said)", topics=topics, method="extractive"
    )


extractive: Summariser = extractive_with(str)
"""The offline summariser with the agent's side as stored."""


async def _topics(services: Services, tenant: str, episodes: Sequence[Episode]) -> tuple[str, ...]:
    counts: Counter[str] = Counter()
    for episode in episodes:
        counts.update(await services.graph.topics.of_episode(tenant, episode.uid))
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    return tuple(ranked[:MAX_TOPICS])


def embedded_text(summary: SessionSummary) -> str:
    """What the summary's point embeds: its text and its topics as words."""
    topics = ", ".join(t.replace("-", " ") for t in summary.topics)
    return f"{summary.text}\nTopics: {topics}" if topics else summary.text


async def _points(services: Services, summaries: Sequence[SessionSummary]) -> list[VectorPoint]:
    texts = [embedded_text(s) for s in summaries]
    vectors = await services.embedder.embed_documents(texts)
    return [
        _point(summary, text, vector.tolist())
        for summary, text, vector in zip(summaries, texts, vectors, strict=True)
    ]


def _point(summary: SessionSummary, text: str, dense: list[float]) -> VectorPoint:
    return VectorPoint(
        id=point_id(summary.tenant, summary.uid),
        dense=dense,
        sparse=encode_document(text),
        payload={
            "tenant": summary.tenant,
            "episode_uid": summary.uid,  # the point's owner: the summary, not one of its turns
            "summary_uid": summary.uid,
            "text": summary.text,
            "thread_id": summary.thread_id,
            "created_at": as_utc(summary.started_at).isoformat(),
            "started_at": as_utc(summary.started_at).isoformat(),
            "ended_at": as_utc(summary.ended_at).isoformat(),
            "episode_uids": list(summary.episode_uids),
            "topics": list(summary.topics),
            "archived": False,
        },
    )


async def write_summary(services: Services, summary: SessionSummary) -> None:
    """Store a summary: its point first, then the graph node and edges (see the module doc)."""
    await services.vectors.upsert("summaries", await _points(services, [summary]))
    await services.graph.summaries.upsert(summary)


async def index_summaries(services: Services, tenant: str) -> int:
    """(Re-)embed every summary of the tenant into `summaries` (`mneme reindex`: the graph
    is the source of truth); the number of points written."""
    summaries = await services.graph.summaries.list(tenant)
    for start in range(0, len(summaries), 64):
        batch = summaries[start : start + 64]
        await services.vectors.upsert("summaries", await _points(services, batch))
    return len(summaries)


async def delete_summary(services: Services, tenant: str, uid: str) -> None:
    """Remove a summary: its point first, then the graph node (a re-run finishes it)."""
    await services.vectors.delete_points("summaries", tenant, [point_id(tenant, uid)])
    await services.graph.summaries.delete(tenant, uid)


async def build(
    services: Services,
    tenant: str,
    thread_id: str,
    uid: str,
    episodes: Sequence[Episode],
    summarise: Summariser,
) -> SessionSummary:
    """Summarise `episodes` (one session, oldest first) as summary `uid` and store it."""
    topics = await _topics(services, tenant, episodes)
    draft = await summarise(episodes, topics)
    summary = SessionSummary(
        uid=uid,
        tenant=tenant,
        thread_id=thread_id,
        text=draft.text,
        topics=draft.topics,
        started_at=as_utc(episodes[0].created_at),
        ended_at=as_utc(episodes[-1].created_at),
        episode_uids=tuple(e.uid for e in episodes),
        method=draft.method,
        created_at=utcnow(),
    )
    await write_summary(services, summary)
    return summary


async def summarise_thread(
    services: Services,
    tenant: str,
    thread_id: str,
    *,
    now: datetime | None = None,
    summarise: Summariser = extractive,
) -> int:
    """Summarise the thread's finished sessions that have no summary, or whose summary was built
    from other turns; the number written. Without `now` only sessions followed by another are
    finished (bookkeeping); with it, also the last one once its gap has elapsed at `now`."""
    if thread_id == NO_THREAD:
        return 0
    gap = gap_of(services)
    written = 0
    async with services.locks.get("sessions", tenant):
        while True:
            stored = await services.graph.summaries.list(tenant, thread_id)
            cursor = None
            if stored:  # re-read the last summarised session: it may have grown
                cursor = (as_utc(stored[-1].started_at) - timedelta(microseconds=1), "")
            page = await services.graph.episodes.in_thread(
                tenant, thread_id, after=cursor, limit=PAGE
            )
            sessions = split_sessions(page, gap)
            if not sessions:
                return written
            finished = sessions[:-1]
            last = sessions[-1]
            if len(last) >= MAX_SESSION_TURNS or (now is not None and has_ended(last, now, gap)):
                finished.append(last)
            by_episode = {u: s for s in stored for u in s.episode_uids}
            done = 0
            for session in finished:
                uids = tuple(e.uid for e in session)
                old = next((by_episode[u] for u in uids if u in by_episode), None)
                if old is not None and old.episode_uids == uids:
                    continue
                uid = (
                    old.uid
                    if old is not None
                    else session_uid(tenant, thread_id, session[0].created_at)
                )
                await build(services, tenant, thread_id, uid, session, summarise)
                done += 1
            written += done
            if not done or len(page) < PAGE:
                return written


async def summarise_sessions(
    services: Services,
    tenant: str,
    now: datetime,
    *,
    summarise: Summariser = extractive,
) -> int:
    """Summarise every thread's finished sessions at `now` (the consolidation pass); the number
    of summaries written."""
    statuses = [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    episodes = await services.graph.episodes.list_by_status(tenant, statuses, limit=10_000_000)
    threads = sorted({e.thread_id for e in episodes})
    written = 0
    for thread_id in threads:
        written += await summarise_thread(services, tenant, thread_id, now=now, summarise=summarise)
    return written


async def without_episode(
    services: Services, tenant: str, episode_uid: str, summarise: Summariser = extractive
) -> int:
    """Rebuild every summary of the episode from its other turns (the same uid), or remove it
    when none is left; call it before the episode is deleted. The number of summaries changed."""
    changed = 0
    uids = await services.graph.summaries.of_episode(tenant, episode_uid)
    for summary in await services.graph.summaries.get_many(tenant, uids):
        rest = [u for u in summary.episode_uids if u != episode_uid]
        episodes = sorted(
            await services.graph.episodes.get_many(tenant, rest),
            key=lambda e: (e.created_at, e.uid),
        )
        if episodes:
            await build(services, tenant, summary.thread_id, summary.uid, episodes, summarise)
        else:
            await delete_summary(services, tenant, summary.uid)
        changed += 1
    return changed
