"""Sleep on every graph backend (real SQLite or Neo4j, Qdrant in memory, the real embedder,
offline heuristics): what forgetting must never lose, what it removes, reveries, cornerstones,
expiry, crash safety and idempotency."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pytest

from graph.bookkeeping import run_episode
from graph.consolidation import run_consolidation
from graph.errors import ServiceError
from memory.knowledge.facts import index_facts
from memory.knowledge.rules import point_id
from memory.schema import Belief, EvidenceKind, Fact
from memory.services import Services
from memory.services.doctor import DoctorReport, _check_consistency
from memory.sleep.forgetting import Classifier, Thresholds, offline_classifier
from memory.sleep.levels import Level
from memory.sleep.plan import PLAN_KEY, Decision
from memory.sleep.rescore import Candidate
from memory.sleep.reveries import IMPRESSION_PREFIX, REVERIE_FLOOR, reverie_id, vague_recall
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document
from memory.write.episodes import remember
from tasks.respond import reveries_block
from tasks.route import heuristic_assessment

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
FORGET_ALL = Thresholds(forget=1e9, archive=1e9, forget_salience=1e9, archive_salience=1e9)
"""Thresholds that forget every candidate: only protection keeps anything."""


async def tell(
    services: Services, tenant: str, lines: Sequence[tuple[float, str]], reply: str = "OK."
) -> list[str]:
    """Each line a turn `day` days after T0 (its thread: the day), answered `reply`."""
    uids = []
    for day, text in lines:
        done = await remember(
            services,
            tenant=tenant,
            thread_id=f"day-{int(day)}",
            user_text=text,
            agent_text=reply,
            at=T0 + timedelta(days=day),
            ess=heuristic_assessment(text).evidence.record(),  # as the agent's router scores it
        )
        await run_episode(services, tenant, done.uid)
        uids.append(done.uid)
    return uids


def forget_only(*uids: str):  # type: ignore[no-untyped-def]
    async def classify(batch: Sequence[Candidate]) -> dict[str, Decision]:
        return {c.episode.uid: Decision.FORGET for c in batch if c.episode.uid in uids}

    return classify


async def sleep(
    services: Services,
    tenant: str,
    level: str,
    now: datetime,
    *,
    thresholds: Thresholds | None = None,
    classify: Classifier | None = None,
) -> SimpleNamespace:
    """Run the consolidation graph as every caller does (the lease, every stage of the level);
    its report, field by field. `thresholds` decide forgetting offline in place of the default
    ones, `classify` in place of any."""
    if thresholds is not None:
        classify = offline_classifier(thresholds)
    state = await run_consolidation(services, tenant, level, now.isoformat(), classify=classify)
    return SimpleNamespace(**state["report"])


async def doctor_clean(services: Services) -> list[str]:
    report = DoctorReport()
    await _check_consistency(services, report)
    return [f"{c.name}: {c.detail}" for c in report.checks if not c.ok]


async def test_a_beliefs_only_evidence_survives_forget(services: Services) -> None:
    uids = await tell(
        services, "ana", [(0, "ok"), (1, "haha nice"), (2, "sure, sounds good"), (3, "cool")]
    )
    belief = Belief(
        uid="b1",
        tenant="ana",
        topic="tea",
        statement="tea",
        valence=0.3,
        confidence=0.4,
        updated_at=T0 + timedelta(days=399),  # reflected on lately: deep sleep's decay keeps it
    )
    await services.graph.beliefs.upsert(belief)
    await services.graph.beliefs.add_evidence("ana", uids[1], "b1", EvidenceKind.SUPPORTS, 0.6)

    report = await sleep(
        services, "ana", Level.DEEP, T0 + timedelta(days=400), thresholds=FORGET_ALL
    )

    left = await services.graph.episodes.list_uids("ana")
    assert left == [uids[1]]
    kept = await services.graph.episodes.get("ana", uids[1])
    assert kept is not None and not kept.archived
    assert [e.episode_uid for e in await services.graph.beliefs.evidence("ana", "b1")] == [uids[1]]
    assert (report.forgotten, report.protected) == (3, 1)
    assert await doctor_clean(services) == []


async def test_a_forgotten_episodes_sole_fact_goes_and_a_shared_one_keeps_its_citation(
    services: Services,
) -> None:
    a, b, c = await tell(services, "bo", [(0, "hm"), (1, "yes"), (2, "right")])
    graph = services.graph
    old = Fact(uid="f-old", tenant="bo", text="The user lives in Lyon", valid_from=T0)
    shared = Fact(uid="f-shared", tenant="bo", text="The user has a cat", valid_from=T0)
    await graph.facts.add(old, a)
    await graph.facts.add(shared, a)
    await graph.facts.cite("bo", "f-shared", b)
    new = Fact(uid="f-new", tenant="bo", text="The user lives in Porto", valid_from=T0)
    await graph.facts.supersede("bo", "f-old", new, T0 + timedelta(days=2))
    await graph.facts.cite("bo", "f-new", c)
    await index_facts(
        services, "bo", await graph.facts.get_many("bo", ["f-old", "f-shared", "f-new"])
    )

    report = await sleep(
        services, "bo", Level.DEEP, T0 + timedelta(days=300), classify=forget_only(a)
    )

    assert (report.forgotten, report.facts_deleted) == (1, 1)
    assert await graph.episodes.get("bo", a) is None
    assert await graph.facts.get("bo", "f-old") is None
    assert await graph.facts.sources("bo", "f-shared") == [b]
    assert await graph.facts.sources("bo", "f-new") == [c]
    points = {h.id: h.payload for h in await services.vectors.scroll_points("knowledge", "bo")}
    assert point_id("bo", "f-old") not in points
    assert points[point_id("bo", "f-shared")]["episode_uid"] == b
    assert await doctor_clean(services) == []


async def test_protection_is_rechecked_as_a_batch_forgets(services: Services) -> None:
    """Two episodes state one current fact: forgetting both would leave it without a source."""
    a, b = await tell(services, "cy", [(0, "mm"), (1, "yep")])
    fact = Fact(uid="f", tenant="cy", text="The user is a nurse", valid_from=T0)
    await services.graph.facts.add(fact, a)
    await services.graph.facts.cite("cy", "f", b)

    report = await sleep(
        services, "cy", Level.DEEP, T0 + timedelta(days=500), thresholds=FORGET_ALL
    )

    assert (report.forgotten, report.protected) == (1, 1)
    assert len(await services.graph.facts.sources("cy", "f")) == 1


async def test_a_reverie_replaces_a_faded_node(services: Services) -> None:
    (uid,) = await tell(
        services, "di", [(0, "Watched a documentary about penguins in Antarctica.")]
    )
    report = await sleep(services, "di", Level.DEEP, T0 + timedelta(days=900))

    assert (report.forgotten, report.reveries) == (1, 1)
    assert await services.graph.episodes.get("di", uid) is None
    assert await services.vectors.scroll_episode_uids("derivatives", "di") == set()
    (ghost,) = await services.vectors.scroll_points("reveries", "di")
    assert ghost.id == reverie_id("di", uid)
    assert str(ghost.payload["text"]).startswith("something about ")
    query = (await services.embedder.embed_query("penguins in Antarctica")).tolist()
    (hit,) = await services.vectors.search("reveries", "di", dense=query, limit=3)
    assert hit.id == ghost.id and 0.0 < hit.score < 0.95  # blurred, still near
    (vague,) = await vague_recall(services, "di", "Have I seen anything about penguins?")
    assert vague["text"] == ghost.payload["text"]
    assert "I vaguely remember something about" in reveries_block([vague])
    assert await vague_recall(services, "di", "When is my tax return due?") == []
    assert await doctor_clean(services) == []


async def test_a_reverie_is_recalled_by_its_words_when_the_noise_moves_it_away(
    services: Services,
) -> None:
    """The blur can leave a reverie under the cosine floor even for a message naming its subject
    (about 1 time in 30): the impression's words still recall it, and its prefix recalls nothing."""
    (uid,) = await tell(
        services, "fa", [(0, "Watched a documentary about penguins in Antarctica.")]
    )
    await sleep(services, "fa", Level.DEEP, T0 + timedelta(days=900))
    (ghost,) = await services.vectors.scroll_points("reveries", "fa")
    unlucky = np.random.default_rng(7).normal(size=services.embedder.dim)
    about = str(ghost.payload["text"]).removeprefix(IMPRESSION_PREFIX)
    point = VectorPoint(
        id=ghost.id,
        dense=[float(x) for x in unlucky / np.linalg.norm(unlucky)],
        sparse=encode_document(about),  # as write_reverie builds it
        payload=ghost.payload,
    )
    await services.vectors.upsert("reveries", [point])

    (vague,) = await vague_recall(services, "fa", "Have I seen anything about penguins?")
    assert vague["text"] == ghost.payload["text"] and vague["score"] < REVERIE_FLOOR
    assert await vague_recall(services, "fa", "Is there something about the weather?") == []


async def test_a_cornerstone_never_decays_nor_is_forgotten(services: Services) -> None:
    hub, leaf = await tell(services, "ed", [(0, "Big day."), (1, "fine")])
    await services.graph.topics.link("ed", hub, [f"topic-{i}" for i in range(15)])

    late = T0 + timedelta(days=3000)
    report = await sleep(services, "ed", Level.DEEP, late, thresholds=FORGET_ALL)

    assert await services.graph.episodes.list_uids("ed") == [hub]
    stone = await services.graph.episodes.get("ed", hub)
    assert stone is not None and not stone.archived
    fresh = await sleep(services, "ed", Level.MICRO, late + timedelta(days=3000))
    again = await services.graph.episodes.get("ed", hub)
    assert again is not None and again.salience == pytest.approx(stone.salience)
    assert (report.forgotten, fresh.forgotten) == (1, 0)


async def test_access_strengthens_salience_and_utility(services: Services) -> None:
    a, b = await tell(services, "fa", [(0, "I had pasta for lunch."), (0, "I had rice for lunch.")])
    await services.graph.episodes.record_access("fa", [a], T0 + timedelta(days=50))
    await services.graph.episodes.record_access("fa", [a], T0 + timedelta(days=55))
    await sleep(services, "fa", Level.MICRO, T0 + timedelta(days=60))
    used, unused = await services.graph.episodes.get_many("fa", [a, b])
    assert used.salience > unused.salience
    assert used.utility_score > unused.utility_score


async def test_expiry_archives_what_was_only_true_for_a_while(services: Services) -> None:
    week, event, lasting = await tell(
        services,
        "gi",
        [
            (0, "busy this week"),
            (0, "I am in Paris this week for a conference."),
            (0, "I love jazz."),
        ],
    )
    early = await sleep(services, "gi", Level.DAILY, T0 + timedelta(days=2))
    late = await sleep(services, "gi", Level.DAILY, T0 + timedelta(days=9))

    assert (early.expired, late.expired) == (0, 1)
    gone, trip, kept = await services.graph.episodes.get_many("gi", [week, event, lasting])
    assert gone.archived and not trip.archived and not kept.archived  # the trip is an event
    assert await services.vectors.scroll_episode_uids("derivatives", "gi") == {event, lasting}
    assert await doctor_clean(services) == []


async def test_a_store_failure_mid_cycle_is_finished_by_the_next_run(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [(i, f"small talk number {i}") for i in range(6)]
    await tell(services, "hu", lines)
    await tell(services, "twin", lines)
    when = T0 + timedelta(days=700)
    real = services.vectors.delete_by_episode
    calls = 0

    async def fail_on_third(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 3:
            raise ConnectionError("vector store went away")
        await real(*args, **kwargs)

    monkeypatch.setattr(services.vectors, "delete_by_episode", fail_on_third)
    with pytest.raises(ServiceError, match=r"sleep failed \(ConnectionError\)"):
        await sleep(services, "hu", Level.DEEP, when, thresholds=FORGET_ALL)
    monkeypatch.setattr(services.vectors, "delete_by_episode", real)
    assert await services.graph.state.get("hu", PLAN_KEY) not in (None, "[]")
    assert await doctor_clean(services) == []

    finished = await sleep(services, "hu", Level.DEEP, when, thresholds=FORGET_ALL)
    clean = await sleep(services, "twin", Level.DEEP, when, thresholds=FORGET_ALL)
    assert finished.resumed > 0
    assert await services.graph.state.get("hu", PLAN_KEY) == "[]"
    assert await services.graph.episodes.count("hu") == await services.graph.episodes.count("twin")
    assert await services.vectors.count("reveries", "hu") == clean.reveries
    assert await doctor_clean(services) == []
    again = await sleep(services, "hu", Level.DEEP, when, thresholds=FORGET_ALL)
    assert (again.forgotten, again.archived) == (0, 0)
