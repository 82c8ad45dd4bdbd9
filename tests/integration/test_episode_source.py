"""Where a memory came from, on every graph backend (real stores, the real embedder, a scripted
chat model for the extraction): a turn that passes on another's words is recorded as
`third_party` by bookkeeping, none of the model's facts about the speaker is stored from it (the
facts about others are), retrieval carries the source, and the reply's prompt marks the memory
as another person's words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from graph.bookkeeping import run_episode
from memory.retrieval.recipes import SIMPLE
from memory.retrieval.retrieve import retrieve
from memory.schema import EpisodeSource, FactPrecision
from memory.services import ChatModels, Services
from memory.write.episodes import remember
from tasks.respond import memory_block
from tests.conftest import installed
from tests.unit.fake_chat import ScriptedChatModel

T0 = datetime(2025, 6, 2, 18, 0, tzinfo=UTC)
FORWARDED = 'Anna wrote: "You are moving to Rome next month, and I will visit you in July!"'
OWN = "I moved to Lisbon two years ago."


def extraction(turn: str, *facts: dict[str, Any]) -> dict[str, Any]:
    return {"chunks": [{"text": turn, "questions": []}], "facts": list(facts)}


def fact(text: str, subject: str, kind: str, attribute: str, value: str) -> dict[str, Any]:
    return {
        "text": text,
        "kind": kind,
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "confidence": 0.9,
    }


async def test_another_s_words_are_recorded_as_theirs(services: Services) -> None:
    model = ScriptedChatModel(
        by_tool={
            "Extraction": [
                extraction(  # a model that takes Anna's words for the user's
                    FORWARDED,
                    fact(
                        "The user is moving to Rome next month.",
                        "user",
                        "plan",
                        "plan:move",
                        "Rome",
                    ),
                    fact(
                        "Anna will visit the user in July 2025.",
                        "Anna",
                        "plan",
                        "plan:visit",
                        "July",
                    ),
                ),
                extraction(
                    OWN,
                    fact(
                        "The user moved to Lisbon in 2023.", "user", "attribute", "home", "Lisbon"
                    ),
                ),
            ]
        },
        default_text="Noted.",
    )
    uids = []
    with installed(services, ChatModels(services.settings, override=model)):
        for i, text in enumerate([FORWARDED, OWN]):
            done = await remember(
                services, tenant="t", thread_id="s", user_text=text, at=T0 + timedelta(minutes=i)
            )
            await run_episode(services, "t", done.uid)
            uids.append(done.uid)
    assert not model.by_tool["Extraction"], "the model's extraction was used for both turns"
    forwarded, own = await services.graph.episodes.get_many("t", uids)
    assert (forwarded.source, own.source) == (EpisodeSource.THIRD_PARTY, EpisodeSource.STATED)

    facts = {f.subject: f for f in await services.graph.facts.list("t")}
    assert set(facts) == {"Anna", "user"}  # Anna's plan is hers; the move to Rome is not stored
    assert facts["user"].value == "Lisbon" and facts["user"].precision is FactPrecision.RELATIVE
    assert facts["Anna"].precision is FactPrecision.APPROXIMATE  # "in July", from the calendar

    found = await retrieve(services, "t", "Who is moving to Rome?", SIMPLE, T0 + timedelta(days=1))
    turn = next(c for c in found if c.kind == "episode" and c.uid == forwarded.uid)
    assert turn.said == "third_party"
    block, _ = memory_block([turn.as_dict()], 2000, T0 + timedelta(days=1))
    assert 'from="another person"' in block and "Rome" in block
