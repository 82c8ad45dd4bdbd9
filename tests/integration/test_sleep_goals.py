"""Goals and emotions end to end on every backend: offline bookkeeping records them, deep sleep
(at a simulated `now`) moves goals to completed / abandoned / evolved with a reason and the
turn it rests on, a second run writes nothing, and deleting or forgetting a turn leaves no
goal or emotion pointing at it."""

from __future__ import annotations

from datetime import timedelta

from memory.knowledge.goals import RELEASED, goal_uid
from memory.schema import Fact, FactKind, GoalStatus
from memory.services import Services
from memory.sleep.consolidation import Level, consolidate
from memory.sleep.salience import appraise
from serve.api import Memory
from tests.integration.test_consolidation import T0, doctor_clean, forget_only, tell


async def test_bookkeeping_records_the_turns_emotions_and_goals(services: Services) -> None:
    (uid,) = await tell(
        services, "em", [(0, "I'm so excited and a bit nervous: I want to run a marathon!")]
    )
    graph = services.graph
    emotions = await graph.list_emotions("em")
    assert [(e.name, e.episode_uid, e.person) for e in emotions] == [
        ("excited", uid, "user"),
        ("nervous", uid, "user"),
    ]
    episode = await graph.get_episode("em", uid)
    assert episode is not None
    assert {e.intensity for e in emotions} == {appraise(episode).emotion} and emotions[
        0
    ].intensity > 0
    (goal,) = await graph.list_goals("em")
    (fact,) = await graph.list_facts("em", kinds=[FactKind.GOAL])
    assert (goal.uid, goal.fact_uid, goal.status, goal.evidence_uid) == (
        goal_uid("em", fact.uid),
        fact.uid,
        GoalStatus.ACTIVE,
        None,
    )
    assert goal.text == fact.text and goal.stated_at == T0
    # A transcript turn's emotions are the speaker's.
    (other,) = await tell(services, "em", [(1, "Caroline: I'm so proud of my sister.")])
    assert [(e.name, e.person) for e in await graph.list_emotions("em", other)] == [
        ("proud", "Caroline")
    ]


async def test_deep_sleep_completes_abandons_and_keeps_goals_from_what_was_said(
    services: Services,
) -> None:
    uids = await tell(
        services,
        "gl",
        [
            (0, "I want to run a marathon."),
            (0.5, "I want to learn to sail."),
            (1, "I want to learn Portuguese."),
            (1.5, "I want to visit Japan."),
            (30, "I haven't finished the marathon training plan yet, it's hard."),
            (60, "I finished the marathon last Sunday!"),
            (70, "I gave up on sailing, the sea was too cold."),
            (100, "Japan is still on my list, saving for the flights."),
        ],
    )
    graph = services.graph
    keep = forget_only()  # the forgetting cycle keeps every turn: this test is about goals
    report = await consolidate(services, "gl", Level.DEEP, T0 + timedelta(days=120), classify=keep)

    goals = {g.text: g for g in await graph.list_goals("gl")}
    marathon, sail, portuguese, japan = (
        goals["The user wants to run a marathon."],
        goals["The user wants to learn to sail."],
        goals["The user wants to learn Portuguese."],
        goals["The user wants to visit Japan."],
    )
    assert (marathon.status, marathon.evidence_uid) == (GoalStatus.COMPLETED, uids[5])
    assert marathon.reason == 'said it was done: "I finished the marathon last Sunday!"'
    assert (sail.status, sail.evidence_uid) == (GoalStatus.ABANDONED, uids[6])
    # The knowledge layer ended the goal fact with "gave up" (rule 1).
    assert sail.reason == "superseded by: The user gave up on sailing, the sea was too cold."
    # Nothing about Portuguese since day 1: abandoned by silence, resting on its own statement.
    assert (portuguese.status, portuguese.evidence_uid) == (GoalStatus.ABANDONED, uids[2])
    assert portuguese.reason == "not mentioned for 119 days (since 2025-03-04)"
    assert (japan.status, japan.reason, japan.evidence_uid) == (GoalStatus.ACTIVE, "", None)
    assert marathon.changed_at == T0 + timedelta(days=120)
    assert report.goals == 4 and report.goals_changed == {"completed": 1, "abandoned": 2}
    # Idempotent: the same run again writes nothing.
    again = await consolidate(services, "gl", Level.DEEP, T0 + timedelta(days=120), classify=keep)
    assert again.goals_changed == {}
    assert {g.text: g for g in await graph.list_goals("gl")} == goals
    # The public read and the export carry them.
    memory = Memory(services)
    assert [g.status for g in await memory.goals("gl", "completed")] == [GoalStatus.COMPLETED]
    exported = await memory.export("gl")
    assert len(exported.goals) == 4


async def test_a_goal_superseded_by_a_newer_goal_evolves(services: Services) -> None:
    first, second = await tell(services, "ev", [(0, "ok"), (10, "right")])
    graph = services.graph

    def race(uid: str, value: str, day: int) -> Fact:
        said = T0 + timedelta(days=day)
        text = f"The user wants to run {value}."
        return Fact(
            uid=uid,
            tenant="ev",
            text=text,
            kind=FactKind.GOAL,
            attribute="goal:race",
            value=value,
            valid_from=said,
            learned_at=said,
        )

    old, new = race("f-old", "a marathon", 0), race("f-new", "an ultramarathon", 10)
    await graph.add_fact(old, first)
    stored = await graph.add_fact(new, second)
    await graph.supersede_fact("ev", "f-old", stored, stored.valid_from)

    report = await consolidate(services, "ev", Level.DEEP, T0 + timedelta(days=20))

    assert report.goals == 2  # deep sleep gave the goal facts their Goal nodes
    evolved = await graph.get_goal("ev", goal_uid("ev", "f-old"))
    assert evolved is not None
    assert (evolved.status, evolved.evidence_uid) == (GoalStatus.EVOLVED, second)
    assert evolved.reason == "replaced by a newer goal: The user wants to run an ultramarathon."
    current = await graph.get_goal("ev", goal_uid("ev", "f-new"))
    assert current is not None and current.status is GoalStatus.ACTIVE


async def test_deleting_or_forgetting_a_turn_leaves_no_dangling_goal_or_emotion(
    services: Services,
) -> None:
    uids = await tell(
        services,
        "dl",
        [
            (0, "I want to run a marathon."),
            (1, "I'm worried: I want to learn Portuguese."),
            (5, "ugh, marathon again..."),
            (60, "I finished the marathon last Sunday!"),
        ],
    )
    graph, memory = services.graph, Memory(services)
    keep = forget_only()
    await consolidate(services, "dl", Level.DEEP, T0 + timedelta(days=61), classify=keep)
    marathon = goal_uid("dl", (await graph.list_goals("dl"))[0].fact_uid)
    done = await graph.get_goal("dl", marathon)
    assert done is not None and done.evidence_uid == uids[3]

    # Deleting the turn a status rests on makes the goal active again, until deep sleep.
    await memory.delete("dl", uids[3])
    released = await graph.get_goal("dl", marathon)
    assert released is not None
    assert (released.status, released.reason, released.evidence_uid) == (
        GoalStatus.ACTIVE,
        RELEASED,
        None,
    )
    # Deleting the turn that stated a goal deletes the goal (its fact) and the turn's emotions.
    await memory.delete("dl", uids[1])
    assert [g.text for g in await graph.list_goals("dl")] == ["The user wants to run a marathon."]
    assert await graph.list_emotions("dl") == []

    # Much later the marathon is abandoned by silence, resting on its last mention; forgetting
    # that mention re-points it at the turn that stated the goal, in the same run.
    await consolidate(services, "dl", Level.DEEP, T0 + timedelta(days=200), classify=keep)
    quiet = await graph.get_goal("dl", marathon)
    assert quiet is not None and (quiet.status, quiet.evidence_uid) == (
        GoalStatus.ABANDONED,
        uids[2],
    )
    report = await consolidate(
        services, "dl", Level.DEEP, T0 + timedelta(days=201), classify=forget_only(uids[2])
    )
    assert report.forgotten == 1 and await graph.get_episode("dl", uids[2]) is None
    moved = await graph.get_goal("dl", marathon)
    assert moved is not None and (moved.status, moved.evidence_uid) == (
        GoalStatus.ABANDONED,
        uids[0],
    )
    assert await doctor_clean(services) == []
