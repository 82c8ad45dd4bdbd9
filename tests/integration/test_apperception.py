"""Deep sleep scores how well the agent knows the person and stores it, on every backend."""

from __future__ import annotations

from datetime import timedelta

from memory.beliefs.apperception import EMOTION_SCALE, TOPIC_SCALE, load
from memory.services import Services
from memory.sleep.levels import Level
from tests.integration.test_consolidation import T0, sleep, tell


async def test_deep_sleep_stores_the_apperception_of_what_is_left(services: Services) -> None:
    await tell(
        services,
        "ap",
        [
            (0, "I'm so happy: my sister Ines moved to Lisbon!"),
            (1, "I work at Acme as a nurse, and I'm anxious about the night shifts."),
            (2, "ok"),
        ],
    )
    assert await load(services.graph, "ap") is None  # no deep sleep yet
    micro = await sleep(services, "ap", Level.MICRO, T0 + timedelta(days=3))
    assert micro.apperception is None and await load(services.graph, "ap") is None

    report = await sleep(services, "ap", Level.DEEP, T0 + timedelta(days=3))

    stored = await load(services.graph, "ap")
    assert stored is not None and stored.score == report.apperception
    assert stored.episodes == 3 and stored.level == "low"  # three turns: barely acquainted
    assert stored.emotional_range == round(2 / EMOTION_SCALE, 4)  # happy, anxious
    assert stored.coverage == round(await services.graph.topics.count("ap") / TOPIC_SCALE, 4) > 0
    assert stored.at == (T0 + timedelta(days=3)).isoformat()
