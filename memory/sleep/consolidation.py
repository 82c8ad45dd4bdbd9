"""Sleep: salience and utility recomputed, expiry and the forgetting cycle (docs/design.md section 7).

Three levels, each idempotent and safe to kill half way (the next run finishes it):

- **micro**: reweigh the links between episodes retrieved together, pruning the faded ones
  (`memory.sleep.coretrieval`), then recompute every episode's salience (`memory.sleep.salience`: age,
  accesses, connections (strong links included), the heuristic appraisal) and utility
  (FSRS + ACT-R, from the last access);
- **daily**: micro, then expiry: a passing remark (at most one graph edge) about a bounded
  present or future span ("busy this week", "see you tomorrow") is archived once that span is
  over; then concepts, narrative loops and the diary (`memory.sleep.diary.daily_sleep`, after
  forgetting at deep);
- **deep**: daily, then the forgetting cycle: the lowest-utility episodes older than an hour,
  in batches, are classified KEEP / ARCHIVE (graph kept, its vectors removed: no longer found
  by similarity) / FORGET (removed from both stores; a faded one, salience < 0.1, leaves a
  reverie). The classifier is the LLM when there is one (`tasks.forgetting`), else utility
  thresholds. Whatever the classifier says, cornerstones and pinned episodes are never touched
  (a pin is re-read before each ARCHIVE and FORGET is applied) and an episode
  that is the only evidence of an active belief or the only source of a current fact is KEPT;
  the facts only a forgotten episode stated are deleted, facts it shared keep their other
  sources (and their vector is re-pointed at one); then beliefs (`memory.beliefs.sleep`):
  the unsupported decay, those that lost evidence are reassessed, each change journaled;
  goals (`memory.knowledge.goals`): each goal's status (active / completed / abandoned / evolved) is
  decided again on what is left; last, the bulk apperception score of the memory left
  (`memory.beliefs.apperception`).

Every level ends by summarising the sessions whose idle gap has elapsed at `now`
(`memory.write.sessions`); a forgotten episode's session summary is rebuilt from the session's other
turns first (or removed with its last turn).

Crash safety: the decisions of a batch are written to the tenant's state (`PLAN_KEY`) before
any is applied, and a run first finishes a plan it finds. Each application is ordered so that
every intermediate state is consistent for `mneme doctor`: an episode is marked archived before
its vectors go, and its vectors and fact points go before its graph node.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np

from memory.beliefs.apperception import assess
from memory.beliefs.sleep import sleep_beliefs
from memory.knowledge.facts import index_facts
from memory.knowledge.goal_rules import Judge
from memory.knowledge.goals import reassess_goals
from memory.knowledge.goals import release_episode as release_goals
from memory.knowledge.rules import point_id
from memory.schema import Episode, EpisodeStatus, as_utc, stable_uid, utcnow
from memory.sleep.concepts import Namer, release_episode
from memory.sleep.coretrieval import decay_links
from memory.sleep.diary import Writer, daily_sleep
from memory.sleep.reveries import IMPRESSION_PREFIX
from memory.sleep.salience import (
    appraise,
    episode_salience,
    episode_utility,
    is_cornerstone,
)
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document, tokenize
from memory.text.timeparse import parse_time
from memory.write.episodes import InvalidInput
from memory.write.sessions import Summariser, extractive, summarise_sessions, without_episode

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger("mneme.consolidation")

PLAN_KEY = "consolidation:plan"
"""Tenant-state key of the decisions being applied (JSON), cleared when all are applied."""

LAST_KEY = "consolidation:last"
"""Tenant-state key of the simulated or real time of the last run of each level (JSON)."""

MIN_AGE = timedelta(hours=1)
"""Episodes younger than this are never candidates for forgetting."""

EPHEMERAL_CONNECTIONS = 1
"""Expiry archives only turns with at most this many graph edges (topics, entities, facts,
beliefs): passing remarks, not the memory of an event."""

REVERIE_SALIENCE = 0.1
"""A forgotten episode below this salience leaves a reverie."""

REVERIE_NOISE = 0.3
"""Uniform noise added to each coordinate of a reverie's embedding before re-normalising."""

IMPRESSION_WORDS = 4
"""How many subjects a reverie's impression keeps: vague, but enough words to be recalled by."""

_SCAN = 1_000_000


class Level(StrEnum):
    """How deep a consolidation run goes."""

    MICRO = "micro"
    DAILY = "daily"
    DEEP = "deep"


class Decision(StrEnum):
    """What the forgetting cycle does with an episode."""

    KEEP = "keep"
    ARCHIVE = "archive"
    FORGET = "forget"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The offline classifier: utility below `forget` and salience below `forget_salience` is
    FORGET; else utility below `archive` and salience below `archive_salience` is ARCHIVE;
    anything else is KEEP. Utility says how likely a memory is to be needed (evidence,
    accesses, time since the last); salience guards what matters whatever its use (identity,
    emotion, novelty, connections). For a turn the router scored 0.17 (ordinary talk) and
    nobody recalled, utility falls under 0.09 after about two months and under 0.06 after about
    six; a turn with content (novelty, entities, facts) stays above the salience guards for
    years, so only small talk goes."""

    forget: float = 0.06
    archive: float = 0.09
    forget_salience: float = 0.15
    archive_salience: float = 0.25


@dataclass(frozen=True, slots=True)
class Candidate:
    """An episode the cycle considers, with its scores at the run's time."""

    episode: Episode
    utility: float
    salience: float


Classifier = Callable[[Sequence[Candidate]], Awaitable[dict[str, Decision]]]
"""Decides a batch: uid -> decision; a uid it leaves out is KEPT."""

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total)."""

progress_to: ContextVar[Progress | None] = ContextVar("consolidation_progress", default=None)
"""Where a run reports progress when its caller passed none (the CLI, through the graph)."""


@dataclass(slots=True)
class Report:
    """What a run did, per tenant."""

    tenant: str
    level: Level
    now: datetime
    rescored: int = 0
    expired: int = 0
    kept: int = 0
    archived: int = 0
    forgotten: int = 0
    protected: int = 0
    pinned: int = 0
    facts_deleted: int = 0
    reveries: int = 0
    links_reweighed: int = 0
    links_pruned: int = 0
    beliefs_decayed: int = 0
    beliefs_reassessed: int = 0
    beliefs_resolved: int = 0
    beliefs_removed: int = 0
    goals: int = 0
    goals_changed: dict[str, int] = field(default_factory=dict)
    """Goal status changes written at deep sleep, by the new status."""
    apperception: float | None = None
    resumed: int = 0
    summaries: int = 0
    """Session summaries written (finished sessions, `memory.write.sessions`) or rebuilt (forgetting)."""
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        """The counts as a dict (the CLI's JSON and the graph's output)."""
        return {
            "tenant": self.tenant,
            "level": self.level.value,
            "now": self.now.isoformat(),
            "rescored": self.rescored,
            "expired": self.expired,
            "kept": self.kept,
            "archived": self.archived,
            "forgotten": self.forgotten,
            "protected": self.protected,
            "pinned": self.pinned,
            "facts_deleted": self.facts_deleted,
            "reveries": self.reveries,
            "links_reweighed": self.links_reweighed,
            "links_pruned": self.links_pruned,
            "beliefs_decayed": self.beliefs_decayed,
            "beliefs_reassessed": self.beliefs_reassessed,
            "beliefs_resolved": self.beliefs_resolved,
            "beliefs_removed": self.beliefs_removed,
            "goals": self.goals,
            "goals_changed": dict(self.goals_changed),
            "apperception": self.apperception,
            "resumed": self.resumed,
            "summaries": self.summaries,
            "notes": list(self.notes),
        }


def offline_decision(candidate: Candidate, thresholds: Thresholds) -> Decision:
    """The utility-threshold classifier used without an LLM."""
    if candidate.utility < thresholds.forget and candidate.salience < thresholds.forget_salience:
        return Decision.FORGET
    if candidate.utility < thresholds.archive and candidate.salience < thresholds.archive_salience:
        return Decision.ARCHIVE
    return Decision.KEEP


def offline_classifier(thresholds: Thresholds) -> Classifier:
    """A classifier of the thresholds alone."""

    async def classify(batch: Sequence[Candidate]) -> dict[str, Decision]:
        return {c.episode.uid: offline_decision(c, thresholds) for c in batch}

    return classify


# --------------------------------------------------------------------------- expiry

_DAY_WORDS = re.compile(r"\b(today|tonight|tomorrow)\b", re.IGNORECASE)


def expires_at(episode: Episode) -> datetime | None:
    """When what the turn says stops being true, if it names a bounded present or future span
    ("this week", "next Tuesday", "tomorrow"); None for anything else (the past, no time)."""
    said = as_utc(episode.created_at)
    text = episode.user_text or ""
    window = parse_time(text, said).window
    ends: list[datetime] = []
    if window is not None and as_utc(window.end) > said:
        ends.append(as_utc(window.end))
    match = _DAY_WORDS.search(text)
    if match:
        days = 2 if match.group(1).lower() == "tomorrow" else 1
        start = said.replace(hour=0, minute=0, second=0, microsecond=0)
        ends.append(start + timedelta(days=days))
    return max(ends) if ends else None


# --------------------------------------------------------------------------- the levels


async def _episodes(services: Services, tenant: str) -> list[Episode]:
    statuses = [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    return await services.graph.list_by_status(tenant, statuses, limit=_SCAN)


async def _connections(services: Services, tenant: str, uids: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(0, len(uids), 500):
        out |= await services.graph.episode_connections(tenant, uids[i : i + 500])
    return out


async def rescore(
    services: Services, tenant: str, now: datetime, progress: Progress | None = None
) -> tuple[list[Candidate], dict[str, int], int]:
    """Micro: every episode's salience and utility at `now`, written when they changed.

    Returns the scored episodes, their connections and how many were rewritten.
    """
    episodes = await _episodes(services, tenant)
    connections = await _connections(services, tenant, [e.uid for e in episodes])
    scored: list[Candidate] = []
    changed = 0
    for n, episode in enumerate(episodes, start=1):
        links = connections.get(episode.uid, 0)
        sal = episode_salience(episode, links, now)
        util = episode_utility(episode, now)
        if not (
            math.isclose(sal, episode.salience, abs_tol=1e-9)
            and math.isclose(util, episode.utility_score, abs_tol=1e-9)
        ):
            await services.graph.update_scores(
                tenant, episode.uid, salience=sal, utility_score=util
            )
            changed += 1
        scored.append(Candidate(episode=episode, utility=util, salience=sal))
        if progress and (n % 200 == 0 or n == len(episodes)):
            progress("salience", n, len(episodes))
    return scored, connections, changed


async def consolidate(
    services: Services,
    tenant: str,
    level: Level | str,
    now: datetime,
    *,
    classify: Classifier | None = None,
    thresholds: Thresholds | None = None,
    batch_size: int = 50,
    progress: Progress | None = None,
    name_concepts: Namer | None = None,
    write_entries: Writer | None = None,
    judge_goals: Judge | None = None,
    summarise: Summariser = extractive,
) -> Report:
    """Run one level of consolidation for `tenant` at `now` (a simulated time is fine).

    `name_concepts` names new or changed concepts and `write_entries` writes diary entries at
    the daily level and `judge_goals` judges goals with later mentions at the deep level (the
    LLM; offline labels, entries and goal rules without them). Every level ends by
    summarising the sessions whose idle gap has elapsed at `now` (`summarise`: the LLM task of
    `tasks.sessions`, or the extractive summary)."""
    level = Level(level)
    now = as_utc(now)
    thresholds = thresholds or Thresholds()
    progress = progress or progress_to.get()
    report = Report(tenant=tenant, level=level, now=now)
    # A plan left by a killed run is finished first, whatever level runs now.
    pending = await _load_plan(services, tenant)
    if pending:
        report.resumed = len(pending)
        report.notes.append(f"finished {len(pending)} decisions of an interrupted run")
        await _apply(services, tenant, pending, now, report)
        await services.graph.put_tenant_state(tenant, PLAN_KEY, "[]")
    report.links_reweighed, report.links_pruned = await decay_links(services, tenant, now)
    scored, connections, report.rescored = await rescore(services, tenant, now, progress)
    if level in (Level.DAILY, Level.DEEP):
        await _expire(services, tenant, scored, connections, now, report, progress)
    if level == Level.DEEP:
        await _forget(
            services,
            tenant,
            scored,
            connections,
            now,
            classify or offline_classifier(thresholds),
            batch_size,
            report,
            progress,
        )
        done = await sleep_beliefs(services, tenant, now)
        report.beliefs_decayed, report.beliefs_reassessed = done.decayed, done.reassessed
        report.beliefs_resolved, report.beliefs_removed = done.resolved, done.removed
        left = await _episodes(services, tenant)
        goals = await reassess_goals(services, tenant, left, now, judge=judge_goals)
        report.goals, report.goals_changed = goals.goals, goals.changed
        linked = await _connections(services, tenant, [e.uid for e in left])
        report.apperception = (await assess(services, tenant, left, linked, now)).score
    if level in (Level.DAILY, Level.DEEP):
        report.notes += await daily_sleep(
            services, tenant, now, name_concepts, progress, write_entries
        )
    report.summaries += await summarise_sessions(services, tenant, now, summarise=summarise)
    await _remember_run(services, tenant, level, now)
    return report


async def last_runs(services: Services, tenant: str) -> dict[str, str]:
    """The time (ISO) of the last run of each level for the tenant."""
    raw = await services.graph.get_tenant_state(tenant, LAST_KEY)
    value = json.loads(raw) if raw else {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


async def _remember_run(services: Services, tenant: str, level: Level, now: datetime) -> None:
    runs = await last_runs(services, tenant)
    runs[level.value] = now.isoformat()
    await services.graph.put_tenant_state(tenant, LAST_KEY, json.dumps(runs, sort_keys=True))


async def _expire(
    services: Services,
    tenant: str,
    scored: list[Candidate],
    connections: dict[str, int],
    now: datetime,
    report: Report,
    progress: Progress | None,
) -> None:
    # Only passing remarks expire (at most `EPHEMERAL_CONNECTIONS` edges): a turn linked to
    # people, places or facts is also the memory of an event ("when did I go to Paris?").
    due = [
        c.episode.uid
        for c in scored
        if not c.episode.archived
        and not c.episode.pinned
        and connections.get(c.episode.uid, 0) <= EPHEMERAL_CONNECTIONS
        and (end := expires_at(c.episode)) is not None
        and end <= now
    ]
    if not due:
        return
    protected = await services.graph.sole_evidence(tenant, due)
    plan = {uid: Decision.ARCHIVE for uid in due if uid not in protected}
    report.protected += len(protected)
    await _save_plan(services, tenant, plan)
    before = report.archived
    await _apply(services, tenant, plan, now, report)
    report.expired += report.archived - before
    report.archived = before
    await services.graph.put_tenant_state(tenant, PLAN_KEY, "[]")
    if progress:
        progress("expiry", len(due), len(due))
    for i, c in enumerate(scored):
        if c.episode.uid in plan:
            archived = c.episode.model_copy(update={"archived": True})
            scored[i] = Candidate(episode=archived, utility=c.utility, salience=c.salience)


async def _forget(
    services: Services,
    tenant: str,
    scored: list[Candidate],
    connections: dict[str, int],
    now: datetime,
    classify: Classifier,
    batch_size: int,
    report: Report,
    progress: Progress | None,
) -> None:
    old_enough = now - MIN_AGE
    pool = sorted(  # archived episodes too: what was archived can fade further, to FORGET
        (
            c
            for c in scored
            if as_utc(c.episode.created_at) <= old_enough
            and not c.episode.pinned
            and not is_cornerstone(connections.get(c.episode.uid, 0))
        ),
        key=lambda c: (c.utility, c.episode.uid),
    )
    done = 0
    for start in range(0, len(pool), max(1, batch_size)):
        batch = pool[start : start + batch_size]
        decided = await classify(batch)
        plan: dict[str, Decision] = {}
        for c in batch:
            decision = decided.get(c.episode.uid, Decision.KEEP)
            if decision == Decision.ARCHIVE and c.episode.archived:
                continue  # already archived: nothing to do
            if decision != Decision.KEEP:
                plan[c.episode.uid] = decision
        protected = await services.graph.sole_evidence(tenant, list(plan))
        for uid in protected:
            plan.pop(uid)
        report.protected += len(protected)
        report.kept += sum(1 for c in batch if c.episode.uid not in plan)
        await _save_plan(services, tenant, plan)
        await _apply(services, tenant, plan, now, report, {c.episode.uid: c for c in batch})
        await services.graph.put_tenant_state(tenant, PLAN_KEY, "[]")
        done += len(batch)
        if progress:
            progress("forgetting", done, len(pool))
        if all(decided.get(c.episode.uid, Decision.KEEP) == Decision.KEEP for c in batch):
            # sorted by utility: a batch the classifier keeps whole ends the cycle
            report.kept += len(pool) - done
            break


# --------------------------------------------------------------------------- the plan


async def _save_plan(services: Services, tenant: str, plan: dict[str, Decision]) -> None:
    value = json.dumps([[uid, d.value] for uid, d in plan.items()])
    await services.graph.put_tenant_state(tenant, PLAN_KEY, value)


async def _load_plan(services: Services, tenant: str) -> dict[str, Decision]:
    raw = await services.graph.get_tenant_state(tenant, PLAN_KEY)
    if not raw:
        return {}
    try:
        return {str(uid): Decision(d) for uid, d in json.loads(raw)}
    except (ValueError, TypeError):
        log.warning("consolidation: unreadable plan for %s dropped", tenant)
        return {}


async def _apply(
    services: Services,
    tenant: str,
    plan: dict[str, Decision],
    now: datetime,
    report: Report,
    scored: dict[str, Candidate] | None = None,
) -> None:
    for uid, decision in plan.items():
        episode = await services.graph.get_episode(tenant, uid)
        if episode is None:
            continue  # forgotten by the run this plan was left by
        if episode.pinned:  # pinned since the plan was made: the pin wins
            report.pinned += 1
            continue
        if decision == Decision.ARCHIVE:
            await archive_episode(services, episode)
            report.archived += 1
        elif decision == Decision.FORGET:
            # Re-checked one by one: forgetting one episode can leave another the only evidence.
            if await services.graph.sole_evidence(tenant, [uid]):
                report.protected += 1
                continue
            found = scored.get(uid) if scored else None
            salience = found.salience if found else episode.salience
            deleted, reverie, rebuilt = await forget_episode(services, episode, salience, now)
            report.forgotten += 1
            report.summaries += rebuilt
            report.facts_deleted += deleted
            report.reveries += int(reverie)


async def archive_episode(services: Services, episode: Episode) -> None:
    """Graph kept, vectors of its text removed (no longer found by similarity). Idempotent."""
    if not episode.archived:
        await services.graph.update_scores(episode.tenant, episode.uid, archived=True)
    await services.vectors.delete_by_episode(
        episode.tenant, episode.uid, ["derivatives", "prospective"]
    )


async def forget_episode(
    services: Services, episode: Episode, salience: float, now: datetime
) -> tuple[int, bool, int]:
    """Remove an episode from both stores; returns (facts deleted, reverie written, session
    summaries rebuilt or removed).

    Facts only it stated are deleted; facts it shared keep their other sources and their point
    is re-pointed at one of those. The summaries of its session are rebuilt from the session's
    other turns (extractively: forgetting makes no LLM call) or removed when it was the only
    one, before the episode goes. Ordered for crash safety (see the module docstring).
    """
    tenant, uid = episode.tenant, episode.uid
    await archive_episode(services, episode)
    reverie = False
    if salience < REVERIE_SALIENCE:
        reverie = await write_reverie(services, episode, now)
    fact_uids = await services.graph.facts_stated_by(tenant, uid)
    sources = await services.graph.sources_of_facts(tenant, fact_uids)
    alone = [f for f in fact_uids if [s for s in sources.get(f, []) if s != uid] == []]
    shared = [f for f in fact_uids if f not in alone]
    if alone:
        points = [point_id(tenant, f) for f in alone]
        await services.vectors.delete_points("knowledge", tenant, points)
        for f in alone:
            await services.graph.delete_fact(tenant, f)
    if shared:  # re-pointed at a remaining source before this one goes
        facts = await services.graph.get_facts(tenant, shared)
        await index_facts(services, tenant, facts, exclude={uid})
    await release_episode(services, tenant, uid)
    await release_goals(services, tenant, uid, now)
    rebuilt = await without_episode(services, tenant, uid)
    await services.graph.delete_episode(tenant, uid)
    return len(alone), reverie, rebuilt


# --------------------------------------------------------------------------- reveries


def reverie_id(tenant: str, episode_uid: str) -> str:
    """The point id of the reverie an episode left."""
    return stable_uid(tenant, episode_uid, "reverie")


def perturb(vector: np.ndarray, seed: str, noise: float = REVERIE_NOISE) -> list[float]:
    """The vector plus uniform noise in [-noise, noise] per coordinate, re-normalised
    (deterministic per seed, so re-running writes the same ghost)."""
    rng = np.random.default_rng(int(stable_uid(seed).replace("-", "")[:16], 16))
    out = np.asarray(vector, dtype=np.float64) + rng.uniform(-noise, noise, size=len(vector))
    norm = float(np.linalg.norm(out)) or 1.0
    return [float(x) for x in out / norm]


def impression_words(candidates: Sequence[str], most: int = IMPRESSION_WORDS) -> list[str]:
    """The first `most` candidates (entities, then topics, then the turn's longer words) that add
    a content word the earlier ones lack: "Antarctica" and the topic "antarctica" count once."""
    kept: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        tokens = set(tokenize(candidate))
        if not tokens or tokens <= seen:
            continue
        kept.append(candidate)
        seen |= tokens
        if len(kept) == most:
            break
    return kept


async def write_reverie(services: Services, episode: Episode, now: datetime) -> bool:
    """Leave the ghost of a faded episode in `reveries`: a blurred embedding, the ids of its
    neighbours, and a one-line vague impression (its topics and entities, else a few words)."""
    tenant, uid = episode.tenant, episode.uid
    topics = await services.graph.episode_topics(tenant, uid)
    entities = [e.name for e in await services.graph.episode_entities(tenant, uid)]
    neighbours = [n.episode.uid for n in await services.graph.temporal_neighbours(tenant, uid, 1)]
    words = [w for w in re.findall(r"[^\W_]+", episode.user_text) if len(w) > 3]
    about = impression_words([*entities, *(t.replace("-", " ") for t in topics), *words])
    if not about:
        return False
    impression = IMPRESSION_PREFIX + ", ".join(about)
    vector = (await services.embedder.embed_documents([episode.user_text or impression]))[0]
    point = VectorPoint(
        id=reverie_id(tenant, uid),
        dense=perturb(vector, reverie_id(tenant, uid)),
        sparse=encode_document(", ".join(about)),  # the words it is about, not the prefix
        payload={
            "tenant": tenant,
            "episode_uid": uid,
            "text": impression,
            "neighbours": neighbours,
            "created_at": as_utc(episode.created_at).isoformat(),
            "faded_at": now.isoformat(),
            "archived": False,
        },
    )
    await services.vectors.upsert("reveries", [point])
    return True


__all__ = [
    "LAST_KEY",
    "PLAN_KEY",
    "Candidate",
    "Classifier",
    "Decision",
    "Level",
    "Report",
    "Thresholds",
    "appraise",
    "archive_episode",
    "consolidate",
    "expires_at",
    "forget_episode",
    "last_runs",
    "offline_classifier",
    "offline_decision",
    "parse_level",
    "parse_now",
    "perturb",
    "progress_to",
    "rescore",
    "impression_words",
    "write_reverie",
]


# --------------------------------------------------------------------------- input


def parse_level(value: object) -> Level:
    """The level named by a caller; `InvalidInput` naming the choices otherwise."""
    try:
        return Level(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(level.value for level in Level)
        raise InvalidInput(
            f"unknown consolidation level {value!r}; choose one of {choices}"
        ) from None


async def parse_now(services: Services, tenant: str, value: object) -> datetime:
    """The run's time: an ISO 8601 instant (naive means UTC) or None for now.

    A time before the tenant's newest memory is refused: consolidation cannot run in the past
    of the data (that would age memories backwards).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        now = utcnow()
    elif isinstance(value, datetime):
        now = as_utc(value)
    else:
        try:
            now = as_utc(datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")))
        except ValueError:
            raise InvalidInput(
                f"--now {value!r} is not an ISO 8601 time; e.g. 2024-06-01 or 2024-06-01T09:00:00Z"
            ) from None
    newest = await services.graph.recent_activity(tenant, 1)
    if newest and as_utc(newest[-1]) > now:
        raise InvalidInput(
            f"--now {now.isoformat()} is before {tenant!r}'s newest memory "
            f"({as_utc(newest[-1]).isoformat()}); consolidation cannot run in the past of the data"
        )
    return now
