"""rerank: the listwise LLM order, its retry and fallback, trimming, access recording."""

from __future__ import annotations

from memory.schema import utcnow
from nodes.rerank import rerank
from nodes.state import route_state
from tasks.rerank import apply_ranking
from tasks.route import RouteDecision, RouteKind
from tests.unit.fake_chat import human, runtime, seed


def candidates(uids: list[str]) -> list[dict]:
    now = utcnow().isoformat()
    return [
        {
            "episode_uid": uid,
            "score": 1.0 - i / 10,
            "created_at": now,
            "content": f"c{i}",
            "fragments": [f"fragment {i}"],
        }
        for i, uid in enumerate(uids)
    ]


def state(uids: list[str], kind: RouteKind = "SIMPLE", n: int = 2) -> dict:
    return {
        **human("Which one?"),
        "route": route_state(RouteDecision(kind=kind, n_results=n)),
        "candidates": candidates(uids),
    }


async def test_model_order_is_applied_and_trimmed(agent_services, fake_chat) -> None:
    model = fake_chat(by_tool={"RerankResult": [{"ranking": [3, 1, 2]}]})
    uids = ["a", "b", "c"]
    out = await rerank(state(uids), runtime())
    assert [m["episode_uid"] for m in out["memories"]] == ["c", "a"]
    assert [m["rank"] for m in out["memories"]] == [1, 2]
    prompt = model.calls[0]["messages"][-1].content
    assert "[1]" in prompt and "fragment 2" in prompt and "Which one?" in prompt


async def test_unknown_ids_are_retried_then_fall_back(agent_services, fake_chat) -> None:
    model = fake_chat(by_tool={"RerankResult": [{"ranking": [9, 12]}, {"ranking": []}]})
    out = await rerank(state(["a", "b", "c"]), runtime())
    assert [m["episode_uid"] for m in out["memories"]] == ["a", "b"]  # score order
    assert out["usage"]["llm_calls"] == 2 and out["usage"]["fallbacks"] == 1
    assert "between 1 and 3" in model.calls[1]["messages"][-1].content


async def test_simple_turns_can_skip_the_call(agent_services, fake_chat) -> None:
    model = fake_chat()
    out = await rerank(state(["a", "b", "c"]), runtime(rerank_simple=False))
    assert [m["episode_uid"] for m in out["memories"]] == ["a", "b"] and model.calls == []


async def test_kept_memories_are_marked_accessed(agent_services, offline) -> None:
    uids = await seed(agent_services, "alice", ["I like tea.", "I like coffee.", "I like jazz."])
    out = await rerank(state(uids, kind="TEMPORAL", n=1), runtime())
    assert out["memories"][0]["episode_uid"] == uids[0]
    first = await agent_services.graph.episodes.get("alice", uids[0])
    other = await agent_services.graph.episodes.get("alice", uids[1])
    assert first.access_count == 1 and first.last_accessed is not None
    assert other.access_count == 0


async def test_no_candidates_no_call(agent_services, fake_chat) -> None:
    model = fake_chat()
    out = await rerank(state([]), runtime())
    assert out["memories"] == [] and model.calls == []


def test_apply_ranking_ignores_repeats_and_unknowns() -> None:
    cands = candidates(["a", "b", "c"])
    assert [m["episode_uid"] for m in apply_ranking(cands, [2, 2, 0, 7, 1], 5)] == ["b", "a"]
