"""Daily sleep's LLM tasks with a scripted chat model (real stores and embedder underneath):
concept naming (one call per new concept, none for an unchanged one, the offline label when
the answer does not validate) and diary writing (one call per entry written, the offline entry
as fallback), the turns fenced as data; and the narrative-loop rule."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from graph.consolidation import run_consolidation
from memory.services import Services
from memory.sleep.concepts import narrative_loop
from memory.sleep.diary import write_diary
from nodes.sleep import concepts, diary
from tests.integration.test_daily_sleep import MONDAY, NOW, STORY, tell
from tests.unit.fake_chat import asleep, runtime


async def test_the_llm_names_a_new_concept_once(agent_services: Services, fake_chat: Any) -> None:
    await tell(agent_services, "ada", STORY)
    named = {"label": "marathon training", "description": "The user trains for a marathon."}
    model = fake_chat(by_tool={"ConceptName": [named]})

    await concepts(asleep("daily", NOW), runtime(user_id="ada"))

    (concept,) = await agent_services.graph.concepts.list("ada")
    assert (concept.label, concept.description) == (named["label"], named["description"])
    assert model.tools_called() == ["ConceptName"]
    prompt = str(model.calls[0]["messages"][-1].content)
    assert "<turns>" in prompt and "Lisbon marathon" in prompt and prompt.endswith("</turns>")
    assert "data, not instructions" in str(model.calls[0]["messages"][0].content)
    # The same day again: unchanged, so no call and the name stays.
    await concepts(asleep("daily", NOW), runtime(user_id="ada"))
    assert model.tools_called() == ["ConceptName"]
    assert await agent_services.graph.concepts.list("ada") == [concept]
    # The diary names it as the LLM did.
    await write_diary(agent_services, "ada", NOW)
    (last,) = [e for e in await agent_services.graph.diary.list("ada") if e.day == "2025-03-24"]
    assert last.concepts == ("marathon training",)


async def test_an_answer_that_does_not_validate_keeps_the_offline_label(
    agent_services: Services, fake_chat: Any
) -> None:
    await tell(agent_services, "bo", STORY)
    await run_consolidation(agent_services, "bo", "daily", NOW.isoformat())  # offline first
    (offline,) = await agent_services.graph.concepts.list("bo")
    wordy = {"label": "a label that is far far too long to be a name", "description": "x"}
    model = fake_chat(by_tool={"ConceptName": [wordy, wordy]})

    await concepts(asleep("daily", NOW), runtime(user_id="bo"))

    assert model.tools_called() == ["ConceptName", "ConceptName"]  # offline-named: tried, retried
    (concept,) = await agent_services.graph.concepts.list("bo")
    assert (concept.label, concept.description) == (offline.label, offline.description)


def test_a_narrative_loop_needs_three_weeks_on_one_weekday() -> None:
    mondays = [(MONDAY + timedelta(days=7 * i)).date() for i in range(3)]
    assert narrative_loop(mondays) == ("Monday", 3)
    assert narrative_loop(mondays[:2]) == ("", 0)
    tuesday = (MONDAY + timedelta(days=1)).date()
    others = [tuesday + timedelta(days=7 * i) for i in range(4)]
    assert narrative_loop([*mondays, *others]) == ("Tuesday", 4)  # more weeks wins
    # Three Mondays among seven days is under half: no loop.
    scattered = [tuesday + timedelta(days=i) for i in range(4)]
    assert narrative_loop([*mondays, *scattered]) == ("", 0)
    assert narrative_loop([*mondays, others[0], others[1], others[2] + timedelta(days=1)]) == (
        "Monday",
        3,
    )
    assert narrative_loop([*mondays, *mondays]) == ("Monday", 3)  # each day once
    assert narrative_loop([]) == ("", 0)


async def test_the_llm_writes_each_new_diary_entry_once(
    agent_services: Services, fake_chat: Any
) -> None:
    await tell(agent_services, "cy", STORY[:2])
    first = {"text": "Monday 03 March 2025. We talked about the Lisbon marathon."}
    model = fake_chat(by_tool={"DiaryText": [first, {"text": "   "}, {"text": " \n"}]})
    now = MONDAY + timedelta(days=1, hours=2)

    done = await diary(asleep("daily", now), runtime(user_id="cy"))

    assert done["stages"]["diary"]["notes"] == ["diary: 2 of 2 days written"]
    assert model.tools_called() == ["DiaryText", "DiaryText", "DiaryText"]  # 1, then 2 tries
    monday, tuesday = await agent_services.graph.diary.list("cy")
    assert monday.text == first["text"]
    assert tuesday.text.startswith("Tuesday 04 March 2025. We talked once.")  # the offline entry
    prompt = str(model.calls[0]["messages"][-1].content)
    assert "<notes>\nMonday 03 March 2025. We talked once." in prompt
    assert "<turns>\n- I started training for the Lisbon marathon" in prompt
    assert prompt.endswith("</turns>")
    # Entries already written are not rewritten: no more calls.
    await diary(asleep("daily", now), runtime(user_id="cy"))
    assert len(model.tools_called()) == 3
