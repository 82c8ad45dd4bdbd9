"""Salience and utility formulas, the forgetting task's prefix map, and the LLM path of the
forgetting cycle with a scripted chat model (real stores and embedder underneath)."""

from __future__ import annotations

import logging
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graph.bookkeeping import run_episode
from graph.consolidation import run_consolidation
from memory.schema import ESS, Episode, ReasoningType
from memory.services import Services
from memory.services.usage import Usage
from memory.sleep.expiry import expires_at
from memory.sleep.plan import Decision
from memory.sleep.rescore import Candidate
from memory.sleep.reveries import impression_words
from memory.sleep.salience import (
    CORNERSTONE_CONNECTIONS,
    Appraisal,
    appraise,
    retrievability,
    salience,
    utility,
)
from memory.write.episodes import InvalidInput, remember
from nodes.sleep import forget
from tasks.forgetting import ForgetBatch, ForgetDecision, llm_classifier, resolve, short_ids
from tests.unit.fake_chat import asleep, runtime

T0 = datetime(2025, 1, 1, 9, tzinfo=UTC)


def episode(text: str, *, ess: ESS | None = None, days: float = 0) -> Episode:
    return Episode(
        uid="u",
        tenant="t",
        thread_id="th",
        content=f"User: {text}",
        user_text=text,
        agent_text="",
        created_at=T0 + timedelta(days=days),
        ess=ess,
    )


def test_salience_follows_the_formula() -> None:
    a = Appraisal(emotion=0.1, identity=0.05, novelty=0.4)
    base = math.exp(-100 / 365)
    resistance = min(3 * 0.05 + 2 * 0.1, 1.0)
    effective = base + resistance * (1 - base)
    expected = effective * (1 + math.log(3 + 1) + 0.4 + 0.5 * math.log(4 + 1)) / 4
    assert salience(100, 3, 4, a) == pytest.approx(expected)
    # strong identity or emotion resists decay completely
    assert salience(1000, 0, 0, Appraisal(identity=0.4)) == pytest.approx(
        salience(0, 0, 0, Appraisal())
    )


def test_a_cornerstone_does_not_decay() -> None:
    a = Appraisal(novelty=0.2)
    n = CORNERSTONE_CONNECTIONS
    assert salience(5000, 0, n, a) == pytest.approx(salience(0, 0, n, a))
    assert salience(5000, 0, n - 1, a) < salience(0, 0, n - 1, a)


def test_utility_follows_fsrs_and_act_r() -> None:
    signals = {
        "specificity": 0.2,
        "grounding": 0.4,
        "rigor": 0.0,
        "source_quality": 0.4,
        "objectivity": 1.0,
    }
    stability = 30 * (0.5 + 0.4)
    expected = math.log(2 + 2) * 0.6 / (1 + 45 / (9 * stability))
    assert utility(2, 0.6, signals, 45) == pytest.approx(expected)
    assert retrievability(0, 10) == 1.0
    assert utility(5, 0.6, signals, 45) > utility(2, 0.6, signals, 45)  # access strengthens


def test_appraisal_reads_emotion_identity_and_novelty() -> None:
    calm = appraise(episode("ok"))
    moved = appraise(episode("I'm so happy and proud, we got the house!"))
    who = appraise(episode("My name is Ada and I work as a welder in Leeds."))
    assert calm == Appraisal(emotion=0.0, identity=0.0, novelty=pytest.approx(0.0, abs=0.05))
    assert moved.emotion > 0.3 and moved.identity == 0.0
    assert who.identity >= 0.2 and who.novelty > calm.novelty
    appeal = ESS(
        score=0.2,
        specificity=0.1,
        grounding=0.1,
        rigor=0.1,
        source_quality=0.1,
        objectivity=0.1,
        reasoning_type=ReasoningType.EMOTIONAL_APPEAL,
    )
    assert appraise(episode("you must agree", ess=appeal)).emotion >= 0.2


def test_expiry_reads_bounded_present_and_future_spans() -> None:
    monday = datetime(2025, 1, 6, 9, tzinfo=UTC)
    week = episode("I'm in Paris this week.").model_copy(update={"created_at": monday})
    assert expires_at(week) == datetime(2025, 1, 13, tzinfo=UTC)
    tomorrow = episode("Remind me tomorrow to call mum").model_copy(update={"created_at": monday})
    assert expires_at(tomorrow) == datetime(2025, 1, 8, tzinfo=UTC)
    assert expires_at(episode("We went to Rome last year.")) is None
    assert expires_at(episode("I love jazz.")) is None


def test_short_ids_are_unambiguous_prefixes() -> None:
    uids = ["abcdef12-0000", "abcdef12-1111", "99999999-aaaa"]
    prefixes = short_ids(uids)
    assert prefixes == {"abcdef12-0": uids[0], "abcdef12-1": uids[1], "99999999": uids[2]}


def test_resolve_applies_nothing_to_unknown_ambiguous_or_conflicting_ids() -> None:
    uids = ["abcdef12-0000", "abcdef12-1111", "99999999-aaaa", "77777777-bbbb"]
    prefixes = short_ids(uids)
    answer = ForgetBatch(
        decisions=[
            ForgetDecision(id="abcdef12-0", decision="forget"),
            ForgetDecision(id="abcdef12", decision="forget"),  # two episodes start so
            ForgetDecision(id="deadbeef", decision="forget"),  # no such episode
            ForgetDecision(id="9999", decision="archive"),  # a shorter, still unique prefix
            ForgetDecision(id="77777777", decision="keep"),
            ForgetDecision(id="77777777", decision="forget"),  # contradicts itself
        ]
    )
    decided, problems = resolve(answer, prefixes)
    assert decided == {uids[0]: Decision.FORGET, uids[2]: Decision.ARCHIVE}
    assert problems == [
        "ambiguous id 'abcdef12' (2 episodes)",
        "unknown id 'deadbeef'",
        "conflicting decisions for '77777777'",
    ]


async def _tell(services: Services, tenant: str, texts: list[str]) -> list[str]:
    uids = []
    for i, text in enumerate(texts):
        done = await remember(
            services,
            tenant=tenant,
            thread_id="t",
            user_text=text,
            agent_text="ok",
            at=T0 + timedelta(days=i),
        )
        await run_episode(services, tenant, done.uid)
        uids.append(done.uid)
    return uids


async def test_the_llm_decides_through_truncated_ids(
    agent_services: Services, fake_chat: Any, caplog: pytest.LogCaptureFixture
) -> None:
    uids = await _tell(agent_services, "alice", ["ok", "haha", "lol", "sure"])
    seen: list[str] = []

    def answer(messages: list[Any]) -> dict[str, Any]:
        ids = re.findall(r"^\[([^\]]+)\]", str(messages[-1].content), flags=re.M)
        seen.extend(ids)
        by_uid = {u: s for s in ids for u in uids if u.startswith(s)}
        return {
            "decisions": [
                {"id": by_uid[uids[0]], "decision": "forget"},
                {"id": by_uid[uids[1]], "decision": "archive"},
                {"id": "zzzzzzzz", "decision": "forget"},
                {"id": "", "decision": "forget"},
            ]
        }

    model = fake_chat(by_tool={"ForgetBatch": [answer]})
    now = T0 + timedelta(days=200)
    with caplog.at_level(logging.WARNING, logger="mneme.forgetting"):
        done = await forget(asleep("deep", now), runtime(user_id="alice"))

    assert model.tools_called() == ["ForgetBatch"]
    assert all(len(s) == 8 for s in seen) and len(seen) == 4
    report = done["stages"]["forget"]
    assert (report["forgotten"], report["archived"], report["kept"]) == (1, 1, 2)
    assert done["usage"]["tasks"]["forgetting"]["calls"] == 1
    assert await agent_services.graph.episodes.list_uids("alice") == sorted(uids[1:])
    assert "unknown id 'zzzzzzzz'" in caplog.text and "unknown id ''" in caplog.text


async def test_without_a_model_the_thresholds_decide(
    agent_services: Services, offline: Any
) -> None:
    await _tell(agent_services, "bob", ["ok", "haha"])
    now = T0 + timedelta(days=400)
    usage = Usage()
    classify = llm_classifier(agent_services, now, usage=usage)
    batch = [
        Candidate(episode=e, utility=0.01, salience=0.05)
        for e in await agent_services.graph.episodes.list_by_status("bob", ["processed"], limit=10)  # type: ignore[list-item]
    ]
    decided = await classify(batch)
    assert set(decided.values()) == {Decision.FORGET}


async def test_the_graph_checks_level_and_time(agent_services: Services) -> None:
    await _tell(agent_services, "cy", ["hello there"])
    with pytest.raises(InvalidInput, match="unknown consolidation level 'weekly'"):
        await run_consolidation(agent_services, "cy", "weekly")
    with pytest.raises(InvalidInput, match="not an ISO 8601 time"):
        await run_consolidation(agent_services, "cy", "deep", "next tuesday")
    with pytest.raises(InvalidInput, match="before 'cy''s newest memory"):
        await run_consolidation(agent_services, "cy", "deep", "2024-12-31")
    state = await run_consolidation(agent_services, "cy", "micro", "2025-03-01T00:00:00Z")
    assert state["report"]["level"] == "micro" and state["report"]["rescored"] == 1


def test_the_simulated_year_is_seeded_and_mixed() -> None:
    from collections import Counter

    from bench.sleep import CHANGED, IMPORTANT, UNUSED, USE_GROUPS, generate

    year = generate(7, 2000)
    assert year == generate(7, 2000) and year != generate(8, 2000)
    assert len(year) == 2000 and [t.day for t in year] == sorted(t.day for t in year)
    kinds = Counter(t.kind for t in year)
    assert all(3 <= kinds[f.key] <= 5 for f in IMPORTANT + UNUSED)
    assert all(3 <= kinds[f.key] <= 4 for f in CHANGED)
    for fact in CHANGED:  # changed half way: the change is its first turn, in the middle
        days = [t.day for t in year if t.kind == fact.key]
        assert 0.45 * 365 <= min(days) <= 0.65 * 365
    assert {len(g) for g in USE_GROUPS.values()} == {6, 8}
    assert 0.45 < kinds["small"] / len(year) < 0.65 and kinds["detail"] > 0.3 * len(year)
    assert all(0 <= t.day <= 365 for t in year)


def test_an_impression_names_each_subject_once() -> None:
    words = ["Antarctica", "antarctica", "documentary", "Watched", "documentary", "penguins"]
    assert impression_words(words) == ["Antarctica", "documentary", "Watched", "penguins"]
    assert impression_words(["the", "and"]) == []
    assert impression_words([f"word{i}" for i in range(9)], most=2) == ["word0", "word1"]
