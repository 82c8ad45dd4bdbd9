"""Deep sleep for beliefs on every graph backend (real stores and embedder, offline): a belief
that lost evidence to forgetting is reassessed, a contested one is resolved only by the
evidence left, unsupported ones decay, and every change is in the journal, removals too."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.beliefs.evidence import apply_evidence
from memory.beliefs.sleep import journal, replayed
from memory.schema import EvidenceKind
from memory.services import Services
from memory.sleep.levels import Level
from serve.api import Memory
from tests.integration.test_consolidation import FORGET_ALL, T0, forget_only, sleep, tell

FOR, AGAINST = EvidenceKind.SUPPORTS, EvidenceKind.CONTRADICTS


async def test_a_belief_that_lost_evidence_is_reassessed_and_journaled(
    services: Services,
) -> None:
    a, b = await tell(services, "bl", [(0, "mm"), (1, "yep")])
    for uid in (a, b):
        await apply_evidence(services, "bl", uid, "green-tea", FOR, 0.9, quality=0.9, at=T0)
    before = await services.graph.beliefs.get_by_topic("bl", "green-tea")
    assert before is not None and before.evidence_count == 2

    report = await sleep(services, "bl", Level.DEEP, T0 + timedelta(days=3), thresholds=FORGET_ALL)

    assert (report.forgotten, report.protected) == (1, 1)  # the last evidence is kept
    after = await services.graph.beliefs.get_by_topic("bl", "green-tea")
    edges = await services.graph.beliefs.evidence("bl", before.uid)
    assert after is not None and after.evidence_count == len(edges) == 1
    positions = {edges[0].episode_uid: 2}  # b was the tenant's second turn
    assert after.confidence == pytest.approx(replayed(edges, positions)[1], abs=1e-6)
    assert after.confidence < before.confidence
    done = (report.beliefs_decayed, report.beliefs_reassessed, report.beliefs_removed)
    assert done == (0, 1, 0)
    (entry,) = await journal(services, "bl")
    assert entry.uid == before.uid and entry.reason.startswith("1 of 2 pieces of evidence")
    assert entry.before.confidence == pytest.approx(before.confidence)
    assert entry.after is not None and entry.after.confidence == pytest.approx(after.confidence)

    again = await sleep(services, "bl", Level.DEEP, T0 + timedelta(days=4))
    assert again.beliefs_reassessed == 0
    assert len(await journal(services, "bl")) == 1
    same = await services.graph.beliefs.get_by_topic("bl", "green-tea")
    assert same is not None and same.confidence == after.confidence


async def test_contested_is_resolved_only_by_the_evidence_left(services: Services) -> None:
    pro, con, pro2, con2 = await tell(services, "bc", [(0, "a"), (0, "b"), (0, "c"), (0, "d")])
    await apply_evidence(services, "bc", pro, "remote-work", FOR, 0.8, at=T0)
    await apply_evidence(services, "bc", con, "remote-work", AGAINST, 0.7, at=T0)
    await apply_evidence(services, "bc", pro2, "early-rising", FOR, 0.8, at=T0)
    await apply_evidence(services, "bc", con2, "early-rising", AGAINST, 0.7, at=T0)
    for topic in ("remote-work", "early-rising"):  # as reflection marks them
        held = await services.graph.beliefs.get_by_topic("bc", topic)
        assert held is not None
        await services.graph.beliefs.upsert(held.model_copy(update={"contested": True}))

    report = await sleep(
        services, "bc", Level.DEEP, T0 + timedelta(days=2), classify=forget_only(con)
    )

    assert report.forgotten == 1
    resolved = await services.graph.beliefs.get_by_topic("bc", "remote-work")
    untouched = await services.graph.beliefs.get_by_topic("bc", "early-rising")
    assert resolved is not None and not resolved.contested and resolved.evidence_count == 1
    assert untouched is not None and untouched.contested  # time alone resolves nothing
    assert report.beliefs_resolved == 1
    (entry,) = await journal(services, "bc")
    assert "no longer contested" in entry.reason


async def test_unsupported_beliefs_decay_and_a_removal_is_journaled(services: Services) -> None:
    (uid,) = await tell(services, "bd", [(0, "hmm")])
    await apply_evidence(services, "bd", uid, "jazz", FOR, 0.9, quality=0.9, at=T0)
    held = await services.graph.beliefs.get_by_topic("bd", "jazz")
    assert held is not None and 0 < held.confidence < 0.2

    faded = await sleep(services, "bd", Level.DEEP, T0 + timedelta(days=35))
    assert faded.beliefs_decayed == 1
    gone = await sleep(services, "bd", Level.DEEP, T0 + timedelta(days=400))
    assert gone.beliefs_removed == 1
    assert await services.graph.beliefs.get_by_topic("bd", "jazz") is None
    decayed, removed = await journal(services, "bd")
    assert decayed.after is not None and decayed.after.confidence < held.confidence
    assert removed.after is None and removed.reason.endswith("removed")
    assert removed.before.confidence == pytest.approx(decayed.after.confidence)
    exported = await Memory(services).export("bd")  # the journal is held about the person too
    assert [c["reason"] for c in exported.belief_changes] == [decayed.reason, removed.reason]
