"""Fidelity: whether the agent's account of a person still says what they said
(docs/adr/0151-fidelity.md).

The account is what the agent holds about the person: the current facts whose subject is the
user, and the agent's active beliefs formed from their turns. Each rests on episodes, the
person's own words (a fact's sources, a belief's supporting evidence). A record has **drifted**
when:

- `no_evidence`: none of the episodes it rests on is left (forgotten or deleted);
- `superseded`: (beliefs) every turn it rests on stated facts, and every one of those facts has
  since been replaced by a newer one: the person has said otherwise since;
- `unlike_its_words`: its own words are no closer to it, by embedding cosine, than much of the
  rest of what the person said: more than `DRIFT_SHARE` of the person's newest `BASELINE` turns
  (its own left out) are closer to the record than the closest turn it rests on. A rank
  against the person's own turns rather than a fixed cosine, so it holds for any embedder and
  any way of speaking; not judged with fewer than `MIN_BASELINE` other turns.

`check_fidelity` reads and embeds; it writes nothing. Deep sleep runs it after reflection (the
report's `fidelity`) and keeps what it found, in counts, as the tenant's last check
(`remember_check`, read by `mneme doctor` through `last_check`); `mneme fidelity --user ID`
runs it on demand and keeps nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory.beliefs.evidence import list_active_beliefs
from memory.schema import USER_SUBJECT, EpisodeStatus, EvidenceKind, as_utc

if TYPE_CHECKING:
    from memory.services import Services

BASELINE = 200
"""The person's newest turns the records are ranked against."""
MIN_BASELINE = 10
"""Fewer other turns than this: the rank is not judged."""
DRIFT_SHARE = 0.1
"""A record drifted when more than this share of the person's other turns are closer to it than
the closest turn it rests on (its words are not among the nearest tenth of what they said)."""

LAST_KEY = "fidelity:last"
"""Tenant-state key of deep sleep's last check (JSON: `at`, `checked`, `drifted` by reason)."""

_SCAN = 1_000_000

Reason = Literal["no_evidence", "superseded", "unlike_its_words"]


@dataclass(frozen=True, slots=True)
class Drift:
    """One record of the account that no longer says what the person said."""

    kind: Literal["fact", "belief"]
    uid: str
    text: str
    reason: Reason
    detail: str
    evidence: list[str] = field(default_factory=list)
    """The episodes it rests on that are left."""


@dataclass(slots=True)
class Fidelity:
    """What one fidelity check found."""

    checked: int = 0
    drifted: list[Drift] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        """For the consolidation report and `--json`."""
        return {"checked": self.checked, "drifted": [asdict(d) for d in self.drifted]}

    def note(self) -> str:
        """One line for the consolidation report's notes."""
        return f"fidelity: {len(self.drifted)} of {self.checked} records drifted from the person's words"


@dataclass(frozen=True, slots=True)
class _Record:
    kind: Literal["fact", "belief"]
    uid: str
    text: str
    evidence: list[str]


async def _account(services: Services, tenant: str) -> list[_Record]:
    """The current facts about the user and the active beliefs, with the episodes they rest on."""
    graph = services.graph
    facts = await graph.facts.list(tenant, subject=USER_SUBJECT)
    sources = await graph.facts.sources_many(tenant, [f.uid for f in facts])
    records = [_Record("fact", f.uid, f.text, sources.get(f.uid, [])) for f in facts]
    for b in await list_active_beliefs(graph, tenant):
        edges = await graph.beliefs.evidence(tenant, b.uid, _SCAN)
        supports = [e.episode_uid for e in edges if e.kind is EvidenceKind.SUPPORTS]
        records.append(_Record("belief", b.uid, b.statement, supports))
    return records


async def _superseded(services: Services, tenant: str, episodes: Sequence[str]) -> str | None:
    """Why every fact the episodes state is replaced now, or None (one still holds, or one
    episode states none)."""
    graph = services.graph
    replaced = []
    for uid in episodes:
        stated = await graph.facts.get_many(tenant, await graph.facts.stated_by(tenant, uid))
        if not stated or any(f.superseded_by is None for f in stated):
            return None
        replaced += [f for f in stated]
    newer = await graph.facts.get_many(tenant, sorted({str(f.superseded_by) for f in replaced}))
    return "what it rests on was replaced: " + "; ".join(
        f'"{old.text}" by "{new.text}"'
        for old in replaced
        for new in newer
        if new.uid == old.superseded_by
    )


async def check_fidelity(services: Services, tenant: str) -> Fidelity:
    """Compare the agent's account of the person with their own words; what drifted."""
    graph = services.graph
    records = await _account(services, tenant)
    found = Fidelity(checked=len(records))
    if not records:
        return found
    statuses = [EpisodeStatus.STORED, EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    turns = await graph.episodes.list_by_status(tenant, statuses, limit=_SCAN)
    turns = [e for e in turns if e.user_text.strip()]
    newest = sorted(turns, key=lambda e: (as_utc(e.created_at), e.uid))[-BASELINE:]
    words = {e.uid: e.user_text for e in turns}
    cited = {u for r in records for u in r.evidence if u in words}
    baseline = [e for e in newest if e.uid not in cited]
    texts = [r.text for r in records] + [words[u] for u in sorted(cited)]
    texts += [e.user_text for e in baseline]
    vectors = np.asarray(await services.embedder.embed_documents(texts))
    of_record = vectors[: len(records)]
    of_cited = dict(
        zip(sorted(cited), vectors[len(records) : len(records) + len(cited)], strict=True)
    )
    of_baseline = vectors[len(records) + len(cited) :]
    for i, r in enumerate(records):
        left = [u for u in r.evidence if u in words]
        if not left:
            found.drifted.append(
                Drift(r.kind, r.uid, r.text, "no_evidence", "none of the turns it rests on is left")
            )
            continue
        if r.kind == "belief" and (why := await _superseded(services, tenant, left)):
            found.drifted.append(Drift(r.kind, r.uid, r.text, "superseded", why, left))
            continue
        if len(baseline) < MIN_BASELINE:
            continue
        own = max(float(of_record[i] @ of_cited[u]) for u in left)
        closer = float(np.mean(of_baseline @ of_record[i] > own))
        if closer > DRIFT_SHARE:
            detail = (
                f"{closer:.0%} of their other turns are closer to it than its own words "
                f"(cosine {own:.2f})"
            )
            found.drifted.append(Drift(r.kind, r.uid, r.text, "unlike_its_words", detail, left))
    return found


@dataclass(frozen=True, slots=True)
class LastCheck:
    """What the tenant's last kept check found, in counts."""

    at: datetime
    """The time of the run that checked (a deep sleep's, simulated or real)."""
    checked: int
    drifted: dict[str, int]
    """Drifted records by reason (`Reason`); empty when none drifted."""

    @property
    def drifts(self) -> int:
        """How many records drifted."""
        return sum(self.drifted.values())


async def remember_check(services: Services, tenant: str, at: datetime, found: Fidelity) -> None:
    """Keep `found` (counts only; the records are `mneme fidelity`'s to list) as the tenant's
    last check, run at `at`. One write that replaces the previous one: a crash before it leaves
    the previous check, which the next deep sleep replaces."""
    reasons: dict[str, int] = {}
    for d in found.drifted:
        reasons[d.reason] = reasons.get(d.reason, 0) + 1
    value = {"at": as_utc(at).isoformat(), "checked": found.checked, "drifted": reasons}
    await services.graph.state.put(tenant, LAST_KEY, json.dumps(value, sort_keys=True))


async def last_check(services: Services, tenant: str) -> LastCheck | None:
    """The tenant's last kept check, or None (never checked, or a value this code cannot read)."""
    raw = await services.graph.state.get(tenant, LAST_KEY)
    try:
        value = json.loads(raw) if raw else None
        if not isinstance(value, dict):
            return None
        drifted = {str(k): int(v) for k, v in dict(value.get("drifted") or {}).items()}
        return LastCheck(
            at=as_utc(datetime.fromisoformat(str(value["at"]))),
            checked=int(value["checked"]),
            drifted=drifted,
        )
    except (KeyError, TypeError, ValueError):
        return None


__all__ = [
    "BASELINE",
    "DRIFT_SHARE",
    "LAST_KEY",
    "MIN_BASELINE",
    "Drift",
    "Fidelity",
    "LastCheck",
    "check_fidelity",
    "last_check",
    "remember_check",
]
