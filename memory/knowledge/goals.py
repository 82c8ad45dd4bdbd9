"""Goal nodes: one per goal fact, with a status reassessed at deep sleep.

Bookkeeping extracts goals as facts (`FactKind.GOAL`); `record_goals` gives each goal fact an
episode states its Goal node (active), and deep sleep (`reassess_goals`, after forgetting)
first adds the Goal of any goal fact that has none (a bookkeeping run killed between the two
writes) and then decides every goal's status again from what the memory holds at the run's
time, in this order:

1. **evolved**: its fact was superseded by a newer goal fact (the knowledge layer's rule: same
   subject and attribute, another value); superseded by a fact that is not a goal, it is
   completed or abandoned when that fact's text says so, else evolved;
2. **evolved** / **abandoned** / **completed**: the first later turn of the same speaker with a
   clause about the goal's object (`goal_rules.about`: a shared object word other than the
   goal's verb; calendar words never count, so "I finished the marathon" is about "run a
   marathon this year") that says it changed (a replacement construction or a verb of
   changing: "instead", "rather than", "switched", "postponed to May"), was given up (a verb
   of ending in any tense, a negated intention: "dropped", "scrapped", "not going to ... after
   all", "no longer") or was done (the goal's own verb or a verb of achieving or getting in a
   perfective form governing its object: "ran my first marathon", "passed", "bought the car"),
   not negated, not hypothetical, not a question and not about another person ("my sister got
   her licence"): `goal_reading`;
3. **abandoned** by silence: no turn of that speaker has mentioned the goal's object words
   for more than `SILENT_DAYS` days at the run's time, and the goal's own horizon ("this
   year", "by October", "in six months": `goal_rules.horizon`), when it names one, is over;
4. else **active**.

The rules are in `memory.knowledge.goal_rules`.

With a model (`tasks.goal_assessment`), the goals that have later mentions (rules 2 and 3)
are judged in batches by one structured call each, the offline verdict as its fallback;
superseded goals and silence stay with the rules. The status is kept with its reason and the
episode it rests on, and written only when it changed (`changed_at` is the run's time), so a
second run writes nothing and a killed run is finished by the next. A goal whose fact is
deleted goes with it (the store's cascade); forgetting or deleting the episode a status rests
on makes the goal active again (`release_episode`), and the next deep sleep decides anew
from what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.knowledge.goal_rules import (
    Case,
    Judge,
    Timeline,
    Verdict,
    mentions_of,
    offline_verdict,
    replaced_verdict,
    silence_verdict,
)
from memory.schema import (
    Episode,
    Fact,
    FactKind,
    Goal,
    as_utc,
    stable_uid,
)

if TYPE_CHECKING:
    from memory.services import Services


RELEASED = "the turn its status rested on was forgotten; reassessed at the next deep sleep"
"""The reason of a goal made active again by `release_episode`."""


@dataclass(slots=True)
class GoalReport:
    """What a reassessment did."""

    goals: int = 0
    created: int = 0
    changed: dict[str, int] = field(default_factory=dict)
    """Status changes written, by the new status."""


def goal_uid(tenant: str, fact_uid: str) -> str:
    """The uid of the goal tracking a goal fact."""
    return stable_uid(tenant, "goal", fact_uid)


def goal_of(fact: Fact) -> Goal:
    """A new, active Goal for a goal fact."""
    stated = as_utc(fact.learned_at or fact.valid_from)
    return Goal(
        uid=goal_uid(fact.tenant, fact.uid),
        tenant=fact.tenant,
        fact_uid=fact.uid,
        text=fact.text,
        subject=fact.subject,
        stated_at=stated,
        changed_at=stated,
    )


async def record_goals(services: Services, episode: Episode) -> int:
    """Give each goal fact the episode states its Goal (active), leaving existing ones as they
    are; how many were created."""
    graph, tenant = services.graph, episode.tenant
    facts = await graph.facts.get_many(tenant, await graph.facts.stated_by(tenant, episode.uid))
    created = 0
    for fact in facts:
        if (
            fact.kind is FactKind.GOAL
            and await graph.goals.get(tenant, goal_uid(tenant, fact.uid)) is None
        ):
            created += await graph.goals.put(goal_of(fact)) is not None
    return created


async def release_episode(services: Services, tenant: str, episode_uid: str, at: datetime) -> int:
    """Before an episode is forgotten or deleted: goals whose status rests on it become active
    again (`RELEASED`). Idempotent; how many did."""
    return await services.graph.goals.reset_evidence(tenant, episode_uid, RELEASED, at)


# --------------------------------------------------------------------------- the offline rules


# --------------------------------------------------------------------------- deep sleep


async def reassess_goals(
    services: Services,
    tenant: str,
    episodes: Sequence[Episode],
    now: datetime,
    *,
    judge: Judge | None = None,
    batch_size: int = 10,
) -> GoalReport:
    """Deep sleep's goal step (the module docstring): create missing goals, decide each one's
    status at `now`, write those that changed."""
    graph, report = services.graph, GoalReport()
    facts = await graph.facts.list(tenant, include_superseded=True, kinds=[FactKind.GOAL])
    goals = {g.fact_uid: g for g in await graph.goals.list(tenant)}
    for fact in facts:
        if fact.uid not in goals:
            stored = await graph.goals.put(goal_of(fact))
            if stored is not None:
                goals[fact.uid] = stored
                report.created += 1
    report.goals = len(goals)
    timeline = Timeline(episodes)
    by_uid = {f.uid: f for f in facts}
    replacing = await graph.facts.get_many(
        tenant, [f.superseded_by for f in facts if f.superseded_by]
    )
    replacements = {f.uid: f for f in replacing}
    sources = await graph.facts.sources_many(tenant, [*by_uid, *replacements])
    verdicts: dict[str, Verdict] = {}
    cases: list[Case] = []
    for fact_uid, goal in goals.items():
        tracked = by_uid.get(fact_uid)
        new = replacements.get(tracked.superseded_by or "") if tracked else None
        if new is not None:
            verdicts[goal.uid] = replaced_verdict(new, timeline.last(sources.get(new.uid, [])))
            continue
        stated_in = sources.get(fact_uid, [])
        mentions = mentions_of(goal, timeline, stated_in, now)
        last_source = timeline.last(stated_in)
        verdicts[goal.uid] = offline_verdict(goal, mentions, now, last_source)
        if mentions:
            quiet = silence_verdict(goal, mentions, now, last_source)
            cases.append(Case(goal, mentions, verdicts[goal.uid], quiet))
    if judge is not None:
        for i in range(0, len(cases), batch_size):
            batch = cases[i : i + batch_size]
            asked = {c.goal.uid for c in batch}
            verdicts |= {k: v for k, v in (await judge(batch)).items() if k in asked}
    for goal in goals.values():
        await _write(services, goal, verdicts[goal.uid], now, report)
    return report


async def _write(
    services: Services, goal: Goal, verdict: Verdict, now: datetime, report: GoalReport
) -> None:
    same = (goal.status, goal.reason, goal.evidence_uid) == (
        verdict.status,
        verdict.reason,
        verdict.evidence_uid,
    )
    if same:
        return
    update = {
        "status": verdict.status,
        "reason": verdict.reason,
        "evidence_uid": verdict.evidence_uid,
        "changed_at": as_utc(now),
    }
    await services.graph.goals.put(goal.model_copy(update=update))
    report.changed[verdict.status.value] = report.changed.get(verdict.status.value, 0) + 1


__all__ = [
    "RELEASED",
    "GoalReport",
    "goal_of",
    "goal_uid",
    "reassess_goals",
    "record_goals",
    "release_episode",
]
