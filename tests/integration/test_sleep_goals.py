"""Goals and emotions end to end on every backend: offline bookkeeping records them, deep sleep
(at a simulated `now`) moves goals to completed / abandoned / evolved with a reason and the
turn it rests on, a second run writes nothing, and deleting or forgetting a turn leaves no
goal or emotion pointing at it."""

from __future__ import annotations

from datetime import timedelta

from memory.knowledge.goals import RELEASED, goal_uid
from memory.schema import Fact, FactKind, GoalStatus
from memory.services import Services
from memory.sleep.levels import Level
from memory.sleep.salience import appraise
from serve.api import Memory
from tests.integration.test_consolidation import T0, doctor_clean, forget_only, sleep, tell


async def test_bookkeeping_records_the_turns_emotions_and_goals(services: Services) -> None:
    (uid,) = await tell(
        services, "em", [(0, "I'm so excited and a bit nervous: I want to run a marathon!")]
    )
    graph = services.graph
    emotions = await graph.emotions.list("em")
    assert [(e.name, e.episode_uid, e.person) for e in emotions] == [
        ("excited", uid, "user"),
        ("nervous", uid, "user"),
    ]
    episode = await graph.episodes.get("em", uid)
    assert episode is not None
    assert {e.intensity for e in emotions} == {appraise(episode).emotion} and emotions[
        0
    ].intensity > 0
    (goal,) = await graph.goals.list("em")
    (fact,) = await graph.facts.list("em", kinds=[FactKind.GOAL])
    assert (goal.uid, goal.fact_uid, goal.status, goal.evidence_uid) == (
        goal_uid("em", fact.uid),
        fact.uid,
        GoalStatus.ACTIVE,
        None,
    )
    assert goal.text == fact.text and goal.stated_at == T0
    # A transcript turn's emotions are the speaker's.
    (other,) = await tell(services, "em", [(1, "Caroline: I'm so proud of my sister.")])
    assert [(e.name, e.person) for e in await graph.emotions.list("em", other)] == [
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
    report = await sleep(services, "gl", Level.DEEP, T0 + timedelta(days=120), classify=keep)

    goals = {g.text: g for g in await graph.goals.list("gl")}
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
    again = await sleep(services, "gl", Level.DEEP, T0 + timedelta(days=120), classify=keep)
    assert again.goals_changed == {}
    assert {g.text: g for g in await graph.goals.list("gl")} == goals
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
    await graph.facts.add(old, first)
    stored = await graph.facts.add(new, second)
    await graph.facts.supersede("ev", "f-old", stored, stored.valid_from)

    report = await sleep(services, "ev", Level.DEEP, T0 + timedelta(days=20))

    assert report.goals == 2  # deep sleep gave the goal facts their Goal nodes
    evolved = await graph.goals.get("ev", goal_uid("ev", "f-old"))
    assert evolved is not None
    assert (evolved.status, evolved.evidence_uid) == (GoalStatus.EVOLVED, second)
    assert evolved.reason == "replaced by a newer goal: The user wants to run an ultramarathon."
    current = await graph.goals.get("ev", goal_uid("ev", "f-new"))
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
    await sleep(services, "dl", Level.DEEP, T0 + timedelta(days=61), classify=keep)
    marathon = goal_uid("dl", (await graph.goals.list("dl"))[0].fact_uid)
    done = await graph.goals.get("dl", marathon)
    assert done is not None and done.evidence_uid == uids[3]

    # Deleting the turn a status rests on makes the goal active again, until deep sleep.
    await memory.delete("dl", uids[3])
    released = await graph.goals.get("dl", marathon)
    assert released is not None
    assert (released.status, released.reason, released.evidence_uid) == (
        GoalStatus.ACTIVE,
        RELEASED,
        None,
    )
    # Deleting the turn that stated a goal deletes the goal (its fact) and the turn's emotions.
    await memory.delete("dl", uids[1])
    assert [g.text for g in await graph.goals.list("dl")] == ["The user wants to run a marathon."]
    assert await graph.emotions.list("dl") == []

    # Much later the marathon is abandoned by silence, resting on its last mention; forgetting
    # that mention re-points it at the turn that stated the goal, in the same run.
    await sleep(services, "dl", Level.DEEP, T0 + timedelta(days=200), classify=keep)
    quiet = await graph.goals.get("dl", marathon)
    assert quiet is not None and (quiet.status, quiet.evidence_uid) == (
        GoalStatus.ABANDONED,
        uids[2],
    )
    report = await sleep(
        services, "dl", Level.DEEP, T0 + timedelta(days=201), classify=forget_only(uids[2])
    )
    assert report.forgotten == 1 and await graph.episodes.get("dl", uids[2]) is None
    moved = await graph.goals.get("dl", marathon)
    assert moved is not None and (moved.status, moved.evidence_uid) == (
        GoalStatus.ABANDONED,
        uids[0],
    )
    assert await doctor_clean(services) == []


async def test_dated_goals_complete_evolve_and_wait_for_their_horizon(
    services: Services,
) -> None:
    """The README's goal: "run a marathon this year" is completed by "I finished the
    marathon" (the date words no longer raise the bar); "this year" keeps a silent goal active
    until the year ends, a goal with no horizon is abandoned after `SILENT_DAYS`; a change of
    goal evolves the old one."""
    uids = await tell(
        services,
        "hz",
        [
            (0, "I want to run a marathon this year."),
            (1, "I want to visit Japan this year."),
            (2, "I want to learn to sail."),
            (3, "I want to climb Kilimanjaro."),
            (100, "Busy month at work. I finished the marathon in 4 hours though!"),
            (120, "I changed my mind about Kilimanjaro, I'm aiming for Mont Blanc instead."),
        ],
    )
    graph, keep = services.graph, forget_only()
    autumn = T0 + timedelta(days=210)  # 2025-09-29, 208 days after the last goal was stated
    await sleep(services, "hz", Level.DEEP, autumn, classify=keep)
    goals = {g.text: g for g in await graph.goals.list("hz")}
    marathon = goals["The user wants to run a marathon this year (2025)."]
    assert (marathon.status, marathon.evidence_uid) == (GoalStatus.COMPLETED, uids[4])
    assert marathon.reason == 'said it was done: "I finished the marathon in 4 hours though!"'
    japan = goals["The user wants to visit Japan this year (2025)."]
    assert japan.status is GoalStatus.ACTIVE  # silent for 208 days, but the year is not over
    sail = goals["The user wants to learn to sail."]
    assert (sail.status, sail.evidence_uid) == (GoalStatus.ABANDONED, uids[2])
    assert sail.reason == "not mentioned for 208 days (since 2025-03-05)"
    kilimanjaro = goals["The user wants to climb Kilimanjaro."]
    assert (kilimanjaro.status, kilimanjaro.evidence_uid) == (GoalStatus.EVOLVED, uids[5])
    assert kilimanjaro.reason.startswith('said it changed: "I changed my mind about Kilimanjaro')
    # the new goal is a goal of its own, active
    (blanc,) = [g for t, g in goals.items() if "Mont Blanc" in t]
    assert blanc.status is GoalStatus.ACTIVE

    # once the year is over, the silent dated goal is abandoned, saying why
    await sleep(services, "hz", Level.DEEP, T0 + timedelta(days=305), classify=keep)
    japan_after = await graph.goals.get("hz", japan.uid)
    assert japan_after is not None and japan_after.status is GoalStatus.ABANDONED
    assert japan_after.reason == (
        "not mentioned for 304 days (since 2025-03-04), past its horizon (2025-12-31)"
    )
    assert japan_after.evidence_uid == uids[1]
