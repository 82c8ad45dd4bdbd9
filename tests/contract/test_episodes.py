"""Episodes: create and read, dedup, the TEMPORAL_NEXT chain, deletion, status, access, scores."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.schema import ESS, EpisodeStatus, ReasoningType
from memory.stores.base import CreateResult, GraphStore, StoreError

from ._support import T0, at, new_episode

PENDING, STORED, INDEXED, PROCESSED = (
    EpisodeStatus.PENDING,
    EpisodeStatus.STORED,
    EpisodeStatus.INDEXED,
    EpisodeStatus.PROCESSED,
)


async def chain_of(graph: GraphStore, tenant: str, uid: str) -> list[str]:
    """The whole chain through `uid`, in chain order."""
    around = await graph.episodes.neighbours(tenant, uid, 1000)
    before = [n.episode.uid for n in around if n.offset < 0]
    after = [n.episode.uid for n in around if n.offset > 0]
    return [*before, uid, *after]


async def offsets(graph: GraphStore, tenant: str, uid: str, k: int) -> list[tuple[int, str]]:
    return [(n.offset, n.episode.uid) for n in await graph.episodes.neighbours(tenant, uid, k)]


# --------------------------------------------------------------------------- create and read


async def test_create_then_get_returns_every_field(graph: GraphStore) -> None:
    result = await graph.episodes.create(new_episode("t1", "Hello there", uid="ep-1"))
    assert result == CreateResult(uid="ep-1", duplicate=False)

    got = await graph.episodes.get("t1", "ep-1")
    assert got is not None
    assert got.uid == "ep-1"
    assert got.tenant == "t1"
    assert got.thread_id == "thread-1"
    assert got.user_text == "Hello there"
    assert got.agent_text == "noted"
    assert got.content == "User: Hello there\nAgent: noted"
    assert got.created_at == T0
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.last_accessed is None
    assert got.access_count == 0
    assert got.ess is None
    assert got.status is PENDING
    assert got.archived is False
    assert got.utility_score == 0.0
    assert got.salience == 0.5
    assert await graph.episodes.count("t1") == 1
    assert await graph.episodes.get("t1", "missing") is None


async def test_create_keeps_given_status_and_ess(graph: GraphStore) -> None:
    ess = ESS(
        score=0.7,
        specificity=0.1,
        grounding=0.2,
        rigor=0.3,
        source_quality=0.4,
        objectivity=0.5,
        reasoning_type=ReasoningType.EXPERT,
    )
    ep = new_episode("t1", "with ess", uid="ep-1").model_copy(update={"status": STORED, "ess": ess})
    await graph.episodes.create(ep)
    got = await graph.episodes.get("t1", "ep-1")
    assert got is not None
    assert got.status is STORED
    assert got.ess == ess


async def test_agentless_episode_content(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "only me", uid="ep-1", agent_text=""))
    got = await graph.episodes.get("t1", "ep-1")
    assert got is not None
    assert got.content == "User: only me"
    assert got.agent_text == ""


async def test_get_episodes_follows_the_requested_order(graph: GraphStore) -> None:
    for i, uid in enumerate(["a", "b", "c"]):
        await graph.episodes.create(new_episode("t1", f"text {uid}", i, uid=uid))
    got = await graph.episodes.get_many("t1", ["c", "missing", "a", "b"])
    assert [e.uid for e in got] == ["c", "a", "b"]
    assert [e.uid for e in await graph.episodes.get_many("t1", ["b", "a", "b"])] == ["b", "a", "b"]
    assert await graph.episodes.get_many("t1", []) == []
    assert got[0] == await graph.episodes.get("t1", "c")


# --------------------------------------------------------------------------- identity


async def test_same_content_again_is_a_new_episode_with_its_own_time(graph: GraphStore) -> None:
    first = await graph.episodes.create(new_episode("t1", "I like tea", 0, uid="first"))
    again = await graph.episodes.create(new_episode("t1", "I like tea", 5, uid="second"))
    assert first == CreateResult(uid="first", duplicate=False)
    assert again == CreateResult(uid="second", duplicate=False)
    got = await graph.episodes.get_many("t1", ["first", "second"])
    assert [e.created_at for e in got] == [at(0), at(5)]
    assert got[0].content == got[1].content
    assert await graph.episodes.count("t1") == 2


async def test_messages_that_share_a_long_prefix_are_different(graph: GraphStore) -> None:
    # The case: one vendor template, two vendor names after 500 characters.
    template = "Dear customer, thank you for your order. " * 15
    await graph.episodes.create(new_episode("t1", template + "Vendor: Acme", 0, uid="a"))
    other = await graph.episodes.create(new_episode("t1", template + "Vendor: Globex", 1, uid="b"))
    assert other == CreateResult(uid="b", duplicate=False)
    got = await graph.episodes.get_many("t1", ["a", "b"])
    assert [e.user_text.rsplit(": ", 1)[1] for e in got] == ["Acme", "Globex"]


async def test_retrying_the_same_uid_writes_nothing(graph: GraphStore) -> None:
    ep = new_episode("t1", "retry me", uid="ep-1")
    assert await graph.episodes.create(ep) == CreateResult(uid="ep-1", duplicate=False)
    assert await graph.episodes.create(ep) == CreateResult(uid="ep-1", duplicate=True)
    # A retry carrying other text (e.g. a replay) keeps the first write.
    changed = new_episode("t1", "other text", 1, uid="ep-1")
    assert await graph.episodes.create(changed) == CreateResult(uid="ep-1", duplicate=True)
    got = await graph.episodes.get("t1", "ep-1")
    assert got is not None and (got.user_text, got.created_at) == ("retry me", at(0))
    assert await graph.episodes.count("t1") == 1


async def test_identity_is_per_tenant(graph: GraphStore) -> None:
    a = await graph.episodes.create(new_episode("alice", "identical", uid="a-1"))
    b = await graph.episodes.create(new_episode("bob", "identical", uid="b-1"))
    assert a == CreateResult(uid="a-1", duplicate=False)
    assert b == CreateResult(uid="b-1", duplicate=False)
    with pytest.raises(StoreError):
        await graph.episodes.create(new_episode("bob", "identical", uid="a-1"))
    assert await graph.episodes.count("alice") == 1
    assert await graph.episodes.count("bob") == 1


async def test_attach_reply_completes_a_recorded_turn(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "I moved to Lyon", uid="r", agent_text=""))
    assert await graph.episodes.attach_reply("t1", "r", "Noted, Lyon!") is True
    got = await graph.episodes.get("t1", "r")
    assert got is not None
    assert (got.agent_text, got.status) == ("Noted, Lyon!", EpisodeStatus.PENDING)
    assert got.content == "User: I moved to Lyon\nAgent: Noted, Lyon!"
    # Already indexed (e.g. by a sweep that ran before the reply): bookkeeping runs again.
    await graph.episodes.set_status("t1", "r", EpisodeStatus.PROCESSED)
    assert (
        await graph.episodes.attach_reply("t1", "r", "Noted, Lyon!") is True
    )  # same reply: unchanged
    assert (await graph.episodes.get("t1", "r")).status == EpisodeStatus.PROCESSED  # type: ignore[union-attr]
    assert await graph.episodes.attach_reply("t1", "r", "Lyon, lovely.") is True
    assert (await graph.episodes.get("t1", "r")).status == EpisodeStatus.STORED  # type: ignore[union-attr]
    assert await graph.episodes.attach_reply("t1", "missing", "x") is False
    assert await graph.episodes.attach_reply("other", "r", "hijack") is False
    assert (await graph.episodes.get("t1", "r")).agent_text == "Lyon, lovely."  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the chain


async def test_chain_is_time_ordered_whatever_the_insert_order(graph: GraphStore) -> None:
    for minute in [30, 10, 50, 20, 40]:
        await graph.episodes.create(new_episode("t1", f"at {minute}", minute, uid=f"e{minute}"))
    assert await chain_of(graph, "t1", "e30") == ["e10", "e20", "e30", "e40", "e50"]
    assert await offsets(graph, "t1", "e30", 2) == [
        (-2, "e10"),
        (-1, "e20"),
        (1, "e40"),
        (2, "e50"),
    ]
    assert await offsets(graph, "t1", "e30", 1) == [(-1, "e20"), (1, "e40")]
    # Older than the head and newer than the tail.
    await graph.episodes.create(new_episode("t1", "at 5", 5, uid="e05"))
    await graph.episodes.create(new_episode("t1", "at 60", 60, uid="e60"))
    assert await chain_of(graph, "t1", "e30") == ["e05", "e10", "e20", "e30", "e40", "e50", "e60"]


async def test_neighbours_at_the_ends_of_the_chain(graph: GraphStore) -> None:
    for minute in [10, 20, 30, 40]:
        await graph.episodes.create(new_episode("t1", f"at {minute}", minute, uid=f"e{minute}"))
    assert await offsets(graph, "t1", "e10", 2) == [(1, "e20"), (2, "e30")]
    assert await offsets(graph, "t1", "e40", 3) == [(-3, "e10"), (-2, "e20"), (-1, "e30")]
    assert await offsets(graph, "t1", "e20", 10) == [(-1, "e10"), (1, "e30"), (2, "e40")]
    assert await offsets(graph, "t1", "e20", 0) == []
    assert await offsets(graph, "t1", "missing", 2) == []
    neighbour = (await graph.episodes.neighbours("t1", "e20", 1))[1]
    assert neighbour.episode == await graph.episodes.get("t1", "e30")


async def test_thread_links_join_listed_turns_of_one_thread(graph: GraphStore) -> None:
    for minute, thread in [(10, "a"), (20, "a"), (30, "b"), (40, "a"), (50, "a"), (60, "a")]:
        agent = "" if minute == 20 else "  \n " if minute == 40 else "A reply."
        episode = new_episode(
            "t1", f"at {minute}", minute, uid=f"e{minute}", thread_id=thread, agent_text=agent
        )
        await graph.episodes.create(episode)
    await graph.episodes.create(new_episode("t2", "other tenant", 5, uid="x"))
    listed = ["e10", "e20", "e30", "e40", "e50", "x", "e20", "missing"]  # e60 left out
    links = await graph.episodes.thread_links("t1", listed)
    assert links.adjacent == {
        "e10": (None, "e20"),
        "e20": ("e10", None),  # its next on the chain is thread b
        "e40": (None, "e50"),
        "e50": ("e40", None),  # its next, e60, is not listed
    }
    assert links.paired == {"e10", "e50"}  # e20 has no reply, e40 a blank one
    # Another tenant's episodes are not linked, nor are listed uids of this tenant to theirs.
    assert (await graph.episodes.thread_links("t2", listed)).adjacent == {}
    empty = await graph.episodes.thread_links("t1", [])
    assert empty.adjacent == {} and empty.paired == set()


async def test_neighbours_of_several_episodes_in_one_read(graph: GraphStore) -> None:
    for minute in [10, 20, 30, 40, 50]:
        await graph.episodes.create(new_episode("t1", f"at {minute}", minute, uid=f"e{minute}"))
    await graph.episodes.create(new_episode("t2", "other tenant", 5, uid="x"))
    found = await graph.episodes.neighbours_many("t1", ["e10", "e30", "x", "missing", "e30"], 2)
    assert set(found) == {"e10", "e30"}
    for uid, k in (("e10", 2), ("e30", 2)):
        assert [(n.offset, n.episode.uid) for n in found[uid]] == await offsets(graph, "t1", uid, k)
    assert found["e30"][0].episode == await graph.episodes.get("t1", "e10")
    assert await graph.episodes.neighbours_many("t1", ["e10"], 0) == {}
    assert await graph.episodes.neighbours_many("t1", [], 3) == {}
    assert await graph.episodes.neighbours_many("t2", ["x"], 3) == {}  # alone on its chain


async def test_a_lone_episode_has_no_neighbours(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "alone", uid="only"))
    assert await graph.episodes.neighbours("t1", "only", 3) == []


async def test_equal_times_are_ordered_by_uid(graph: GraphStore) -> None:
    for uid in ["m", "z", "a"]:
        await graph.episodes.create(new_episode("t1", f"same time {uid}", 10, uid=uid))
    await graph.episodes.create(new_episode("t1", "earlier", 0, uid="zz-early"))
    assert await chain_of(graph, "t1", "m") == ["zz-early", "a", "m", "z"]


async def test_concurrent_creates_build_one_ordered_chain(graph: GraphStore) -> None:
    minutes = list(range(30))
    random.Random(7).shuffle(minutes)
    results = await asyncio.gather(
        *(graph.episodes.create(new_episode("t1", f"n{m}", m, uid=f"e{m:02d}")) for m in minutes)
    )
    assert all(not r.duplicate for r in results)
    assert await chain_of(graph, "t1", "e00") == [f"e{m:02d}" for m in range(30)]

    same = await asyncio.gather(
        *(graph.episodes.create(new_episode("t1", "dup", 99, uid="retried")) for _ in range(6))
    )
    assert sum(not r.duplicate for r in same) == 1
    assert len({r.uid for r in same}) == 1
    assert await graph.episodes.count("t1") == 31


# --------------------------------------------------------------------------- deletion


async def test_delete_relinks_the_chain(graph: GraphStore) -> None:
    for minute in [10, 20, 30, 40, 50]:
        await graph.episodes.create(new_episode("t1", f"at {minute}", minute, uid=f"e{minute}"))

    assert await graph.episodes.delete("t1", "e30") is True
    assert await graph.episodes.get("t1", "e30") is None
    assert await offsets(graph, "t1", "e20", 1) == [(-1, "e10"), (1, "e40")]
    assert await offsets(graph, "t1", "e40", 1) == [(-1, "e20"), (1, "e50")]

    assert await graph.episodes.delete("t1", "e10") is True  # the head
    assert await offsets(graph, "t1", "e20", 2) == [(1, "e40"), (2, "e50")]
    assert await graph.episodes.delete("t1", "e50") is True  # the tail
    assert await offsets(graph, "t1", "e40", 2) == [(-1, "e20")]

    assert await graph.episodes.delete("t1", "e50") is False
    assert await graph.episodes.delete("t1", "never") is False
    assert await graph.episodes.count("t1") == 2

    # A deleted episode's content comes back in its place.
    again = await graph.episodes.create(new_episode("t1", "at 30", 30, uid="e30-again"))
    assert again == CreateResult(uid="e30-again", duplicate=False)
    assert await chain_of(graph, "t1", "e20") == ["e20", "e30-again", "e40"]


async def test_delete_removes_the_episode_edges_but_not_their_targets(graph: GraphStore) -> None:
    from memory.schema import Belief, EntityType, EvidenceKind, Fact

    await graph.episodes.create(new_episode("t1", "keep", 0, uid="keep"))
    await graph.episodes.create(new_episode("t1", "gone", 1, uid="gone"))
    await graph.entities.upsert("t1", "Paris", EntityType.PLACE)
    belief = await graph.beliefs.upsert(Belief(tenant="t1", topic="travel", statement="good"))
    fact = Fact(tenant="t1", text="Paris is in France", valid_from=T0)
    for uid in ["keep", "gone"]:
        await graph.topics.link("t1", uid, ["travel"])
        await graph.entities.link_mentions("t1", uid, ["Paris"])
        await graph.beliefs.add_evidence("t1", uid, belief.uid, EvidenceKind.SUPPORTS, 0.5)
        await graph.facts.add(fact, uid)

    assert await graph.episodes.delete("t1", "gone") is True

    assert await graph.topics.of_episode("t1", "gone") == []
    assert await graph.topics.of_episode("t1", "keep") == ["travel"]
    assert await graph.entities.of_episode("t1", "gone") == []
    hits = await graph.entities.episodes_near("t1", ["Paris"], 0)
    assert [h.episode_uid for h in hits] == ["keep"]
    assert [e.episode_uid for e in await graph.beliefs.evidence("t1", belief.uid)] == ["keep"]
    assert await graph.facts.sources("t1", fact.uid) == ["keep"]
    # Topics, entities, beliefs and facts survive; evidence_count records history, not edges.
    assert [e.name for e in await graph.entities.named("t1", ["Paris"])] == ["Paris"]
    stored_belief = await graph.beliefs.get("t1", belief.uid)
    assert stored_belief is not None and stored_belief.evidence_count == 2
    assert await graph.facts.get("t1", fact.uid) == fact


# --------------------------------------------------------------------------- status


async def test_status_moves_forward_only_unless_told(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "s", uid="ep"))

    async def status() -> EpisodeStatus:
        got = await graph.episodes.get("t1", "ep")
        assert got is not None
        return got.status

    assert await graph.episodes.set_status("t1", "ep", STORED) is True
    assert await status() is STORED
    assert await graph.episodes.set_status("t1", "ep", STORED) is False
    assert await graph.episodes.set_status("t1", "ep", PENDING) is False
    assert await status() is STORED
    assert (
        await graph.episodes.set_status("t1", "ep", PROCESSED) is True
    )  # skipping a stage is forward
    assert await graph.episodes.set_status("t1", "ep", INDEXED) is False
    assert await status() is PROCESSED
    assert await graph.episodes.set_status("t1", "ep", PENDING, only_forward=False) is True
    assert await status() is PENDING
    assert await graph.episodes.set_status("t1", "ep", PENDING, only_forward=False) is False
    assert await graph.episodes.set_status("t1", "missing", STORED) is False


async def test_list_by_status_oldest_first_per_tenant_and_across(graph: GraphStore) -> None:
    plan = [  # tenant, uid, minute, status
        ("t1", "p-late", 30, PENDING),
        ("t1", "p-early", 10, PENDING),
        ("t1", "s-mid", 20, STORED),
        ("t1", "i-1", 5, INDEXED),
        ("t2", "q-1", 15, PENDING),
        ("t2", "q-0", 15, STORED),
    ]
    for tenant, uid, minute, st in plan:
        ep = new_episode(tenant, uid, minute, uid=uid).model_copy(update={"status": st})
        await graph.episodes.create(ep)

    async def listed(
        tenant: str | None, statuses: list[EpisodeStatus], limit: int = 1000
    ) -> list[str]:
        return [e.uid for e in await graph.episodes.list_by_status(tenant, statuses, limit)]

    assert await listed("t1", [PENDING]) == ["p-early", "p-late"]
    assert await listed("t1", [PENDING, STORED]) == ["p-early", "s-mid", "p-late"]
    assert await listed("t1", [PENDING, STORED], limit=2) == ["p-early", "s-mid"]
    assert await listed("t1", [PROCESSED]) == []
    assert await listed("t1", []) == []
    assert await listed(None, [PENDING, STORED]) == ["p-early", "q-0", "q-1", "s-mid", "p-late"]
    assert await listed(None, [PENDING], limit=2) == ["p-early", "q-1"]
    episodes = await graph.episodes.list_by_status("t2", [STORED])
    assert episodes == [await graph.episodes.get("t2", "q-0")]

    assert await graph.episodes.list_uids("t1") == ["i-1", "p-early", "p-late", "s-mid"]
    assert await graph.episodes.list_uids(None) == sorted(uid for _, uid, _, _ in plan)
    assert await graph.episodes.list_tenants() == ["t1", "t2"]


# --------------------------------------------------------------------------- access and scores


async def test_record_access_counts_and_stamps(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "a", 0, uid="a"))
    await graph.episodes.create(new_episode("t1", "b", 1, uid="b"))
    await graph.episodes.create(new_episode("t1", "c", 2, uid="c"))

    # A uid listed twice in one call counts once.
    await graph.episodes.record_access("t1", ["a", "b", "a", "missing"], at(60))
    await graph.episodes.record_access("t1", ["a"], at(120))
    await graph.episodes.record_access("t1", [], at(180))

    a, b, c = await graph.episodes.get_many("t1", ["a", "b", "c"])
    assert (a.access_count, a.last_accessed) == (2, at(120))
    assert (b.access_count, b.last_accessed) == (1, at(60))
    assert (c.access_count, c.last_accessed) == (0, None)
    assert a.last_accessed is not None and a.last_accessed.utcoffset() == timedelta(0)


async def test_ess_and_scores_round_trip(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "scored", uid="ep"))
    ess = ESS(
        score=0.25,
        specificity=1.0,
        grounding=0.0,
        rigor=0.5,
        source_quality=0.125,
        objectivity=0.75,
        reasoning_type=ReasoningType.SOCIAL_PRESSURE,
    )
    await graph.episodes.set_ess("t1", "ep", ess)
    await graph.episodes.update_scores("t1", "ep", salience=0.9)
    got = await graph.episodes.get("t1", "ep")
    assert got is not None
    assert got.ess == ess
    assert (got.salience, got.utility_score, got.archived) == (0.9, 0.0, False)

    await graph.episodes.update_scores("t1", "ep", utility_score=1.75, archived=True)
    await graph.episodes.update_scores("t1", "ep")
    got = await graph.episodes.get("t1", "ep")
    assert got is not None
    assert (got.salience, got.utility_score, got.archived) == (0.9, 1.75, True)

    await graph.episodes.update_scores("t1", "ep", archived=False, salience=0.0)
    got = await graph.episodes.get("t1", "ep")
    assert got is not None
    assert (got.salience, got.utility_score, got.archived) == (0.0, 1.75, False)

    # Unknown episodes are ignored.
    await graph.episodes.set_ess("t1", "missing", ess)
    await graph.episodes.update_scores("t1", "missing", salience=0.1)
    assert await graph.episodes.count("t1") == 1


# --------------------------------------------------------------------------- datetimes


async def test_datetimes_round_trip_to_the_microsecond_as_utc(graph: GraphStore) -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    local = datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=india)
    ep = new_episode("t1", "tz", uid="tz").model_copy(update={"created_at": local})
    await graph.episodes.create(ep)
    naive = datetime(2024, 2, 29, 8, 7, 6, 5)
    ep2 = new_episode("t1", "naive", uid="naive").model_copy(update={"created_at": naive})
    await graph.episodes.create(ep2)

    got = await graph.episodes.get("t1", "tz")
    assert got is not None
    assert got.created_at == local
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.created_at.replace(tzinfo=None) == datetime(2023, 12, 31, 18, 29, 59, 999999)
    got2 = await graph.episodes.get("t1", "naive")
    assert got2 is not None
    assert got2.created_at == naive.replace(tzinfo=UTC)  # naive means UTC
    assert got2.created_at.microsecond == 5
    assert await chain_of(graph, "t1", "tz") == ["tz", "naive"]


# --------------------------------------------------------------------------- one thread in order


async def test_thread_episodes_lists_one_thread_in_time_order_after_a_cursor(
    graph: GraphStore,
) -> None:
    for i, (thread, minute) in enumerate(
        [("a", 5), ("b", 1), ("a", 1), ("a", 3), ("a", 3), ("b", 2)]
    ):
        await graph.episodes.create(
            new_episode("t1", f"turn {i}", minute, uid=f"ep-{i}", thread_id=thread)
        )
    await graph.episodes.create(new_episode("t2", "other tenant", 0, uid="x-1", thread_id="a"))
    got = [e.uid for e in await graph.episodes.in_thread("t1", "a")]
    assert got == ["ep-2", "ep-3", "ep-4", "ep-0"]  # (created_at, uid); t2's thread "a" unseen
    after = await graph.episodes.in_thread("t1", "a", after=(at(3), "ep-3"))
    assert [e.uid for e in after] == ["ep-4", "ep-0"]
    assert [e.uid for e in await graph.episodes.in_thread("t1", "a", limit=2)] == ["ep-2", "ep-3"]
    assert await graph.episodes.in_thread("t1", "a", limit=0) == []
    assert await graph.episodes.in_thread("t1", "missing") == []
    assert [e.uid for e in await graph.episodes.in_thread("t2", "a")] == ["x-1"]
