"""Durable episode writes: remember now, index later, sweep whatever was left behind.

The write path has a story for a crash at any line:

1. `remember` writes the episode with status `pending` in one small graph transaction. If it
   returns, the episode is on disk; if it raises, nothing was written and the caller sees why.
2. `index_episode` computes derivatives, marks the episode `stored`, embeds and upserts vectors
   (deterministic ids, so a retry overwrites rather than duplicates), removes points left over
   from an earlier indexing of the same episode, and only then marks it `indexed`.
   A crash or a vector-store failure before that leaves `pending` or `stored`.
3. `sweep` re-runs every episode not yet `indexed` (or not yet `processed`, given a processor).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.schema import (
    ESS,
    Episode,
    EpisodeSource,
    EpisodeStatus,
    NewEpisode,
    VectorKind,
    as_utc,
    clean_text,
    new_uid,
    stable_uid,
    utcnow,
)
from memory.stores.base import NotFound, VectorPoint
from memory.tenant import InvalidTenant, problem, tenant_id
from memory.text.chunking import Derivative, split_turn
from memory.text.sparse import encode_document
from memory.write import limits, quarantine
from memory.write.limits import InvalidInput, TooLarge

if TYPE_CHECKING:
    from memory.services import Services

__all__ = [
    "Conflict",
    "Derivative",
    "InvalidInput",
    "RememberResult",
    "SweepReport",
    "TooLarge",
    "index_episode",
    "remember",
    "sweep",
]

log = logging.getLogger(__name__)


class Conflict(InvalidInput):
    """A write names an episode the tenant already has, with other words (a message id reused
    for another message): nothing is written, and the caller is told, never a silent duplicate."""


@dataclass(frozen=True, slots=True)
class RememberResult:
    """The episode's uid, and whether the tenant already had an episode with that content."""

    uid: str
    duplicate: bool


@dataclass(slots=True)
class SweepReport:
    """What a sweep did: episodes completed, those that failed again (uid → error), those
    left waiting for their backoff or in quarantine, and those quarantined by this sweep."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    waiting: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.failed


async def remember(
    services: Services,
    *,
    tenant: str,
    thread_id: str,
    user_text: str,
    agent_text: str = "",
    at: datetime | None = None,
    ess: ESS | None = None,
    uid: str | None = None,
    source: EpisodeSource = EpisodeSource.STATED,
) -> RememberResult:
    """Persist a turn as a `pending` episode in one small transaction and return its uid.

    `uid` is the episode's identity (`memory.schema.episode_uid` of its source; default: a new
    one). Writing a uid the tenant already has with the same words is a retry: it returns
    `duplicate=True` and writes nothing; with other words (the user's side, or a reply given
    here that differs from the stored one) it raises `Conflict` and writes nothing. The same
    words under another uid are another episode. A turn that breaks a limit of
    `memory.write.limits` (the tenant rule, the message size, a time later than now plus
    `FUTURE_SKEW`, ...) raises `InvalidInput` and writes nothing. `source`: where its words
    came from (`EpisodeSource`; bookkeeping may find a stated turn to be another's words).
    """
    try:
        tenant_id(tenant)  # the one tenant rule; refused, never cleaned
    except InvalidTenant as exc:
        raise InvalidInput(str(exc)) from None
    limits.check_turn(
        "",
        limit=services.settings.max_message_bytes,
        thread_id=thread_id,
        user_text=user_text,
        agent_text=agent_text,
        at=at,
    )
    episode = NewEpisode(
        uid=uid or new_uid(),
        tenant=tenant,
        thread_id=thread_id,
        user_text=user_text,
        agent_text=agent_text,
        created_at=as_utc(at) if at else utcnow(),
        ess=ess,
        source=source,
    )
    result = await services.graph.episodes.create(episode)
    if result.duplicate:
        stored = await services.graph.episodes.get(tenant, result.uid)
        if stored is not None and (
            stored.user_text != clean_text(user_text)
            or (agent_text and stored.agent_text != clean_text(agent_text))
        ):
            raise Conflict(
                f"episode {result.uid} was already remembered with other words; a message id "
                "names one message: send a changed message under a new id"
            )
    return RememberResult(uid=result.uid, duplicate=result.duplicate)


def derivative_id(tenant: str, episode_uid: str, index: int) -> str:
    """The deterministic point id of an episode's index-th derivative."""
    return stable_uid(tenant, episode_uid, "derivative", str(index))


def question_id(tenant: str, episode_uid: str, index: int, q: int) -> str:
    """The deterministic point id of the q-th prospective question of a derivative."""
    return stable_uid(tenant, episode_uid, "question", str(index), str(q))


def _base_payload(episode: Episode) -> dict[str, object]:
    payload: dict[str, object] = {
        "tenant": episode.tenant,
        "episode_uid": episode.uid,
        "thread_id": episode.thread_id,
        "created_at": episode.created_at.isoformat(),
        "salience": episode.salience,
        "archived": episode.archived,
        "ess_score": episode.ess.score if episode.ess else 0.0,
    }
    return payload


async def index_episode(
    services: Services,
    tenant: str,
    uid: str,
    derivatives: Sequence[Derivative] | None = None,
    *,
    episode: Episode | None = None,
) -> int:
    """Embed and upsert an episode's derivatives (and their questions); return how many.

    `derivatives=None` uses the deterministic splitter; `episode` is the episode when the caller
    has read it already (bookkeeping carries it), else it is read here. Running it twice leaves
    the stores as one run does. Raises `NotFound` if the episode does not exist for this tenant.
    """
    if episode is None or (episode.tenant, episode.uid) != (tenant, uid):
        episode = await services.graph.episodes.get(tenant, uid)
    if episode is None:
        raise NotFound(f"episode {uid!r} does not exist for this tenant")
    if episode.archived:  # archived: graph kept, vectors removed (docs/design.md section 7)
        await services.vectors.delete_by_episode(tenant, uid)
        await services.graph.episodes.set_status(tenant, uid, EpisodeStatus.INDEXED)
        return 0
    chunks = (
        list(derivatives)
        if derivatives is not None
        else split_turn(episode.user_text, episode.agent_text)
    )
    chunks = [d for d in chunks if d.text.strip()]
    await services.graph.episodes.set_status(tenant, uid, EpisodeStatus.STORED)

    base = _base_payload(episode)
    texts = [d.text for d in chunks]
    questions = [(i, q, text) for i, d in enumerate(chunks) for q, text in enumerate(d.questions)]
    vectors = await services.embedder.embed_documents(texts + [t for _, _, t in questions])

    points = [
        VectorPoint(
            id=derivative_id(tenant, uid, i),
            dense=vectors[i].tolist(),
            sparse=encode_document(d.text),
            payload={**base, "text": d.text, "chunk": i, "role": d.role},
        )
        for i, d in enumerate(chunks)
    ]
    q_points = [
        VectorPoint(
            id=question_id(tenant, uid, i, q),
            dense=vectors[len(texts) + n].tolist(),
            sparse=encode_document(text),
            payload={
                **base,
                "text": text,
                "chunk": i,
                "derivative_id": derivative_id(tenant, uid, i),
                "derivative_text": chunks[i].text,
            },
        )
        for n, (i, q, text) in enumerate(questions)
    ]
    await services.vectors.upsert("derivatives", points)
    await services.vectors.upsert("prospective", q_points)
    # Upsert first, prune after: a crash in between leaves a superset, never a gap. A `pending`
    # episode has never reached the vector store (`stored` is set before any vector write), so
    # there is nothing stale to look for, and local mode's filtered delete is a full scan.
    if episode.status != EpisodeStatus.PENDING:
        kinds: tuple[tuple[VectorKind, list[VectorPoint]], ...] = (
            ("derivatives", points),
            ("prospective", q_points),
        )
        for kind, kept in kinds:
            await services.vectors.delete_stale(kind, tenant, uid, keep_ids=[p.id for p in kept])
    await services.graph.episodes.set_status(tenant, uid, EpisodeStatus.INDEXED)
    return len(points)


Processor = Callable[[Episode], Awaitable[None]]
Progress = Callable[[int, int], None]


async def sweep(
    services: Services,
    *,
    process: Processor | None = None,
    tenant: str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    retry_quarantined: bool = False,
) -> SweepReport:
    """Finish every episode left behind: not `indexed` (default) or not `processed` (with `process`).

    An episode that failed before is retried only after its backoff, and one that failed
    `MNEME_MAX_ATTEMPTS` times is quarantined and left alone (`retry_quarantined` lifts the
    quarantine first, see `memory.write.quarantine`). A failure is logged, counted and reported,
    never raised, so one bad episode does not stop the rest. `progress(done, total)` is called
    after each.
    """
    statuses = [EpisodeStatus.PENDING, EpisodeStatus.STORED]
    if process is not None:
        statuses.append(EpisodeStatus.INDEXED)
    todo = await services.graph.episodes.list_by_status(tenant, statuses, limit=limit or 1_000_000)
    report = SweepReport()

    async def default(episode: Episode) -> None:
        await index_episode(services, episode.tenant, episode.uid)

    run = process or default
    known: dict[str, dict[str, quarantine.Failure]] = {}
    now = utcnow()
    for n, episode in enumerate(todo, start=1):
        if problem(episode.tenant) is not None:  # written before the tenant rule: unreachable
            report.failed[episode.uid] = "its tenant id breaks the tenant rule; see `mneme doctor`"
            continue
        if episode.tenant not in known:
            if retry_quarantined:
                await quarantine.release(services.graph, episode.tenant)
            known[episode.tenant] = await quarantine.failures(services.graph, episode.tenant)
        before = known[episode.tenant].get(episode.uid)
        if before is not None and not (retry_quarantined or before.due(now)):
            report.waiting.append(episode.uid)
        else:
            await _attempt(services, run, episode, before is not None, report)
        if progress:
            progress(n, len(todo))
    return report


async def _attempt(
    services: Services, run: Processor, episode: Episode, failed_before: bool, report: SweepReport
) -> None:
    """Run one episode's bookkeeping, counting a failure (and quarantining) or clearing it."""
    try:
        await run(episode)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("sweep: episode %s failed again: %s", episode.uid, error)
        report.failed[episode.uid] = error
        try:
            failure = await quarantine.record_failure(
                services.graph, episode.tenant, episode.uid, error, services.settings.max_attempts
            )
        except Exception:
            log.warning("could not count the failure of %s", episode.uid, exc_info=True)
            return
        if failure.quarantined:
            report.quarantined.append(episode.uid)
            log.error("episode %s quarantined after %d attempts", episode.uid, failure.attempts)
        return
    report.done.append(episode.uid)
    if failed_before:
        await quarantine.clear(services.graph, episode.tenant, episode.uid)
