"""Goals (TRACKS a goal fact) and emotions (FELT_IN an episode): put replaces, written only
with the tenant's own fact or episode, ordering and filters, deleted with their fact or
episode, evidence reset, erase. Exact values, the same on every backend."""

from __future__ import annotations

import pytest

from memory.schema import Emotion, Fact, FactKind, Goal, GoalStatus
from memory.stores.base import GraphStore, StoreError

from ._support import at, new_episode


def goal(tenant: str, fact_uid: str, minutes: float = 0, **extra: object) -> Goal:
    fields: dict[str, object] = {
        "uid": f"g-{fact_uid}",
        "tenant": tenant,
        "fact_uid": fact_uid,
        "text": "User wants to run a marathon.",
        "stated_at": at(minutes),
        "changed_at": at(minutes),
    }
    return Goal.model_validate(fields | extra)


def emotion(tenant: str, episode_uid: str, name: str, minutes: float = 0) -> Emotion:
    return Emotion(
        uid=f"{episode_uid}-{name}",
        tenant=tenant,
        episode_uid=episode_uid,
        name=name,
        intensity=0.35,
        felt_at=at(minutes),
    )


async def _story(graph: GraphStore, tenant: str) -> None:
    for i in range(3):
        await graph.episodes.create(new_episode(tenant, f"turn {i}", i, uid=f"{tenant}-e{i}"))
    for i in range(2):
        fact = Fact(
            uid=f"{tenant}-f{i}",
            tenant=tenant,
            text=f"goal {i}",
            kind=FactKind.GOAL,
            valid_from=at(i),
        )
        await graph.facts.add(fact, f"{tenant}-e{i}")


async def test_put_goal_round_trips_replaces_and_needs_the_tenants_fact(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    g = goal("t1", "t1-f0")
    assert await graph.goals.put(g) == g
    assert await graph.goals.get("t1", g.uid) == g
    assert await graph.goals.get("t2", g.uid) is None
    done = g.model_copy(
        update={
            "status": GoalStatus.COMPLETED,
            "reason": 'said it was done: "I ran it"',
            "evidence_uid": "t1-e2",
            "changed_at": at(30),
        }
    )
    assert await graph.goals.put(done) == done
    assert await graph.goals.get("t1", g.uid) == done
    assert await graph.goals.put(goal("t1", "t2-f0")) is None  # another tenant's fact
    assert await graph.goals.put(goal("t1", "missing")) is None
    assert await graph.goals.get("t1", "g-t2-f0") is None
    with pytest.raises(StoreError):
        await graph.goals.put(goal("t2", "t2-f1", uid=g.uid))
    assert await graph.goals.get("t1", g.uid) == done


async def test_goals_list_in_order_by_status_and_go_with_their_fact(graph: GraphStore) -> None:
    await _story(graph, "t1")
    late = goal("t1", "t1-f0", 10)
    early = goal("t1", "t1-f1", 5, status=GoalStatus.ABANDONED, reason="gave up")
    await graph.goals.put(late)
    await graph.goals.put(early)
    assert await graph.goals.list("t1") == [early, late]
    assert await graph.goals.list("t1", GoalStatus.ABANDONED) == [early]
    assert await graph.goals.list("t1", GoalStatus.EVOLVED) == []
    assert await graph.goals.list("t2") == []
    assert await graph.facts.delete("t1", "t1-f1")
    assert await graph.goals.list("t1") == [late]
    assert await graph.goals.get("t1", early.uid) is None


async def test_reset_goal_evidence_makes_goals_resting_on_an_episode_active(
    graph: GraphStore,
) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    done = goal("t1", "t1-f0", status=GoalStatus.COMPLETED, reason="ran it", evidence_uid="t1-e2")
    other = goal("t1", "t1-f1", status=GoalStatus.ABANDONED, reason="quiet", evidence_uid="t1-e1")
    theirs = goal("t2", "t2-f0", status=GoalStatus.COMPLETED, evidence_uid="t1-e2")
    for g in (done, other, theirs):
        await graph.goals.put(g)
    assert await graph.goals.reset_evidence("t1", "t1-e2", "evidence forgotten", at(50)) == 1
    assert await graph.goals.get("t1", done.uid) == done.model_copy(
        update={
            "status": GoalStatus.ACTIVE,
            "reason": "evidence forgotten",
            "evidence_uid": None,
            "changed_at": at(50),
        }
    )
    assert await graph.goals.get("t1", other.uid) == other
    assert await graph.goals.get("t2", theirs.uid) == theirs
    assert await graph.goals.reset_evidence("t1", "t1-e2", "again", at(60)) == 0


async def test_put_emotions_replaces_the_episodes_emotions(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    first = [emotion("t1", "t1-e0", "worried"), emotion("t1", "t1-e0", "excited")]
    assert await graph.emotions.put("t1", "t1-e0", first) == sorted(first, key=lambda e: e.name)
    later = emotion("t1", "t1-e1", "proud", 1)
    await graph.emotions.put("t1", "t1-e1", [later])
    assert await graph.emotions.list("t1") == [first[1], first[0], later]
    assert await graph.emotions.list("t1", "t1-e1") == [later]
    again = [emotion("t1", "t1-e0", "sad")]
    assert await graph.emotions.put("t1", "t1-e0", again) == again
    assert await graph.emotions.list("t1") == [again[0], later]
    assert await graph.emotions.put("t1", "t1-e0", []) == []
    assert await graph.emotions.list("t1") == [later]
    assert await graph.emotions.list("t2") == []
    # Nothing is written for an episode the tenant does not have.
    assert await graph.emotions.put("t1", "t2-e0", [emotion("t1", "t2-e0", "sad")]) == []
    assert await graph.emotions.list("t2", "t2-e0") == []
    with pytest.raises(ValueError, match="not of episode"):
        await graph.emotions.put("t1", "t1-e2", [emotion("t1", "t1-e1", "sad")])


async def test_emotions_go_with_their_episode_and_everything_with_erase(
    graph: GraphStore,
) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    await graph.emotions.put("t1", "t1-e2", [emotion("t1", "t1-e2", "angry", 2)])
    kept = emotion("t1", "t1-e1", "happy", 1)
    await graph.emotions.put("t1", "t1-e1", [kept])
    await graph.emotions.put("t2", "t2-e1", [emotion("t2", "t2-e1", "happy", 1)])
    await graph.goals.put(goal("t1", "t1-f0"))
    await graph.goals.put(goal("t2", "t2-f0"))
    assert await graph.episodes.delete("t1", "t1-e2")
    assert await graph.emotions.list("t1") == [kept]
    await graph.erase_tenant("t1")
    assert await graph.emotions.list("t1") == []
    assert await graph.goals.list("t1") == []
    assert [e.name for e in await graph.emotions.list("t2")] == ["happy"]
    assert [g.fact_uid for g in await graph.goals.list("t2")] == ["t2-f0"]
