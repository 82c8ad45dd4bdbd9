"""The forgetting cycle, at the deep level (docs/design.md section 7, docs/adr/0078).

The lowest-utility episodes older than an hour, in batches, are classified KEEP / ARCHIVE
(graph kept, its vectors removed: no longer found by similarity) / FORGET (removed from both
stores; a faded one, salience < 0.1, leaves a reverie). The classifier is the LLM when there is
one (`tasks.forgetting`), else utility thresholds. Whatever the classifier says, cornerstones and
pinned episodes are never touched (a pin is re-read before each ARCHIVE and FORGET is applied)
and an episode that is the only evidence of an active belief, the only source of a current
fact or a source of a current timeless fact (precision `unbounded`) is KEPT, and so is a turn
next to a protected one on its thread (`memory.sleep.protection`: retrieval lends a turn its
neighbour's relevance); the facts only a forgotten episode stated are deleted, facts it shared
keep their other sources (and their vector is re-pointed at one). The decisions are applied through a
crash-safe plan (`memory.sleep.plan`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.schema import as_utc
from memory.sleep.levels import Progress
from memory.sleep.plan import Applied, Decision, carry_out
from memory.sleep.protection import context_of_protected
from memory.sleep.rescore import Candidate, score
from memory.sleep.reveries import Impress
from memory.sleep.salience import is_cornerstone

if TYPE_CHECKING:
    from memory.services import Services

MIN_AGE = timedelta(hours=1)
"""Episodes younger than this are never candidates for forgetting."""


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


Classifier = Callable[[Sequence[Candidate]], Awaitable[dict[str, Decision]]]
"""Decides a batch: uid -> decision; a uid it leaves out is KEPT."""


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


def _pool(scored: list[Candidate], connections: dict[str, int], now: datetime) -> list[Candidate]:
    """The candidates, lowest utility first: older than `MIN_AGE`, not pinned, not cornerstones
    (archived ones too: what was archived can fade further, to FORGET)."""
    old_enough = now - MIN_AGE
    return sorted(
        (
            c
            for c in scored
            if as_utc(c.episode.created_at) <= old_enough
            and not c.episode.pinned
            and not is_cornerstone(connections.get(c.episode.uid, 0))
        ),
        key=lambda c: (c.utility, c.episode.uid),
    )


def _changes(batch: Sequence[Candidate], decided: dict[str, Decision]) -> dict[str, Decision]:
    """The decisions that change something (not KEEP, not ARCHIVE of what is archived)."""
    plan: dict[str, Decision] = {}
    for c in batch:
        decision = decided.get(c.episode.uid, Decision.KEEP)
        if decision == Decision.ARCHIVE and c.episode.archived:
            continue  # already archived: nothing to do
        if decision != Decision.KEEP:
            plan[c.episode.uid] = decision
    return plan


async def forget(
    services: Services,
    tenant: str,
    now: datetime,
    classify: Classifier,
    *,
    batch_size: int = 50,
    progress: Progress | None = None,
    impress: Impress | None = None,
) -> dict[str, int]:
    """Deep: the forgetting cycle at `now` (the module docstring), batch by batch, each batch's
    decisions carried out through the plan (reveries' impressions by `impress`, the model, when
    given); what it did, by report field."""
    scored, connections = await score(services, tenant, now)
    pool = _pool(scored, connections, now)
    total: Applied = Counter()
    kept = done = 0
    for start in range(0, len(pool), max(1, batch_size)):
        batch = pool[start : start + batch_size]
        decided = await classify(batch)
        plan = _changes(batch, decided)
        protected = await services.graph.episodes.sole_evidence(tenant, list(plan))
        for uid in protected:
            plan.pop(uid)
        total["protected"] += len(protected)
        beside = await context_of_protected(services, tenant, list(plan))
        for uid in beside:
            plan.pop(uid)
        total["context"] += len(beside)
        kept += sum(1 for c in batch if c.episode.uid not in plan)
        salience = {c.episode.uid: c.salience for c in batch}
        total += await carry_out(services, tenant, plan, now, salience, impress=impress)
        done += len(batch)
        if progress:
            progress("forgetting", done, len(pool))
        if all(decided.get(c.episode.uid, Decision.KEEP) == Decision.KEEP for c in batch):
            # sorted by utility: a batch the classifier keeps whole ends the cycle
            kept += len(pool) - done
            break
    return {"kept": kept, **total}
