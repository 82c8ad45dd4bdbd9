"""The durable write path on real stores: remember, index, sweep, and the bad inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.schema import EpisodeStatus, episode_uid
from memory.services import Services
from memory.text.sparse import encode_query
from memory.write.episodes import (
    Derivative,
    InvalidInput,
    index_episode,
    remember,
    sweep,
)

T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


async def _points(services: Services, kind: str, tenant: str) -> list[tuple[str, str]]:
    """Every point of a tenant as sorted (id, payload) rows: a picture of the index."""
    hits = await services.vectors.scroll_points(kind, tenant)
    return sorted((h.id, repr(sorted(h.payload.items()))) for h in hits)


async def _search(services: Services, tenant: str, query: str, limit: int = 5) -> list[str]:
    vec = await services.embedder.embed_query(query)
    hits = await services.vectors.search(
        "derivatives", tenant, dense=vec.tolist(), sparse=encode_query(query), limit=limit
    )
    return list(dict.fromkeys(str(h.payload["episode_uid"]) for h in hits))  # by episode


async def test_remember_is_pending_then_index_makes_it_findable(services: Services) -> None:
    r = await remember(
        services,
        tenant="ada",
        thread_id="t1",
        user_text="My sister Grace just moved to Lisbon for a job at a robotics startup.",
        agent_text="That's a big move! How is she finding Lisbon so far?",
        at=T0,
    )
    assert not r.duplicate
    episode = await services.graph.episodes.get("ada", r.uid)
    assert episode is not None and episode.status == EpisodeStatus.PENDING
    assert "Lisbon" in episode.content and episode.created_at == T0

    n = await index_episode(services, "ada", r.uid)
    assert n == 2  # the user side and the agent side
    episode = await services.graph.episodes.get("ada", r.uid)
    assert episode is not None and episode.status == EpisodeStatus.INDEXED
    assert await _search(services, "ada", "where does Grace live now?") == [r.uid]
    assert await _search(services, "someone-else", "where does Grace live now?") == []


async def test_identity_is_the_source_not_the_content(services: Services) -> None:
    a = await remember(services, tenant="ada", thread_id="t1", user_text="I love  Tea.", at=T0)
    b = await remember(services, tenant="ada", thread_id="t2", user_text="i love tea.", at=T0)
    c = await remember(services, tenant="bob", thread_id="t1", user_text="I love  Tea.", at=T0)
    uid = episode_uid("ada", "t1", "msg:1")
    first = await remember(services, tenant="ada", thread_id="t1", user_text="Hi.", uid=uid)
    retry = await remember(services, tenant="ada", thread_id="t1", user_text="Hi.", uid=uid)
    assert len({a.uid, b.uid, c.uid}) == 3 and not b.duplicate and not c.duplicate
    assert first.uid == retry.uid == uid and retry.duplicate and not first.duplicate
    assert await services.graph.episodes.count("ada") == 3


async def test_reindexing_twice_leaves_the_stores_identical(services: Services) -> None:
    r = await remember(
        services,
        tenant="ada",
        thread_id="t1",
        user_text="We adopted a beagle called Pixel. He hates the rain.",
        agent_text="Pixel is a great name. Beagles do love a dry walk.",
        at=T0,
    )
    derivs = [
        Derivative("Ada adopted a beagle named Pixel.", ("What is Ada's dog called?",)),
        Derivative("Pixel hates the rain.", ("Does Pixel like rain?", "What does the dog hate?")),
    ]
    await index_episode(services, "ada", r.uid, derivs)
    first = (
        await _points(services, "derivatives", "ada"),
        await _points(services, "prospective", "ada"),
    )
    await index_episode(services, "ada", r.uid, derivs)
    second = (
        await _points(services, "derivatives", "ada"),
        await _points(services, "prospective", "ada"),
    )
    assert first == second
    assert len(first[0]) == 2 and len(first[1]) == 3

    # Re-indexing with fewer derivatives removes the stale points, never leaves them behind.
    await index_episode(services, "ada", r.uid, derivs[:1])
    assert len(await _points(services, "derivatives", "ada")) == 1
    assert len(await _points(services, "prospective", "ada")) == 1


async def test_empty_and_oversized_input(services: Services) -> None:
    with pytest.raises(InvalidInput, match="is empty .*nothing to remember"):
        await remember(services, tenant="ada", thread_id="t1", user_text="  ", agent_text="")
    with pytest.raises(InvalidInput, match="tenant"):
        await remember(services, tenant="", thread_id="t1", user_text="hi")
    with pytest.raises(InvalidInput, match="at most"):
        await remember(services, tenant="ada", thread_id="t1", user_text="x" * 4_000_001)
    # One empty side is a normal turn (the user said nothing, or the agent has not replied).
    r = await remember(services, tenant="ada", thread_id="t1", user_text="", agent_text="Hello!")
    assert await index_episode(services, "ada", r.uid) == 1


async def test_the_largest_message_is_stored_verbatim_and_indexed(services: Services) -> None:
    sentence = "The quarterly report covers revenue, churn and the new Oslo office. "
    limit = services.settings.max_message_bytes  # MNEME_MAX_MESSAGE_BYTES, on every surface
    with pytest.raises(InvalidInput, match="1,000,000 bytes"):  # 1 MB: over it, never written
        await remember(services, tenant="ada", thread_id="t1", user_text="x" * 1_000_000)
    end = " Zanzibar finale."
    text = (sentence * (limit // len(sentence) + 1))[: limit - len(end)] + end
    r = await remember(services, tenant="ada", thread_id="t1", user_text=text, at=T0)
    episode = await services.graph.episodes.get("ada", r.uid)
    assert episode is not None and episode.user_text == text
    n = await index_episode(services, "ada", r.uid)
    assert 1 <= n <= 64
    assert await _search(services, "ada", "Zanzibar") == [r.uid]  # the very end is findable


HOSTILE = '\'; DROP TABLE episodes; -- `}) DETACH DELETE n //` "$tenant" %_ {{x}}'


async def test_hostile_text_and_tenant_are_stored_verbatim(services: Services) -> None:
    tenant = "t'`\"}) DETACH DELETE n //"
    user = f"{HOSTILE} and a bell\x07 and a tab\t and a lone \ud800 surrogate"
    r = await remember(services, tenant=tenant, thread_id=HOSTILE, user_text=user, at=T0)
    other = await remember(services, tenant="ada", thread_id="t1", user_text="plain", at=T0)
    await index_episode(services, tenant, r.uid)
    episode = await services.graph.episodes.get(tenant, r.uid)
    assert episode is not None
    assert episode.user_text == user.replace("\ud800", "\ufffd")
    assert episode.thread_id == HOSTILE and episode.tenant == tenant
    assert await services.graph.episodes.get("ada", other.uid) is not None
    assert await _search(services, tenant, "DETACH DELETE bell") == [r.uid]


async def test_vector_failure_leaves_stored_and_sweep_repairs(services: Services) -> None:
    r = await remember(services, tenant="ada", thread_id="t1", user_text="I play the oboe.", at=T0)
    await services.vectors.close()  # the vector store goes away mid-flight
    with pytest.raises(RuntimeError, match="closed"):
        await index_episode(services, "ada", r.uid)
    episode = await services.graph.episodes.get("ada", r.uid)
    assert episode is not None and episode.status == EpisodeStatus.STORED

    from memory.stores.qdrant import QdrantIndex

    services.vectors = await QdrantIndex.open(
        ":memory:",
        api_key=None,
        fingerprint=services.embedder.fingerprint,
        dim=services.embedder.dim,
        timeout_s=2,
    )
    await services.vectors.setup()
    report = await sweep(services)
    assert report.ok and report.done == [r.uid]
    episode = await services.graph.episodes.get("ada", r.uid)
    assert episode is not None and episode.status == EpisodeStatus.INDEXED
    assert await _search(services, "ada", "what instrument?") == [r.uid]
    assert (await sweep(services)).done == []  # nothing left


async def test_sweep_processes_in_time_order_and_reports_progress(services: Services) -> None:
    uids = []
    for i in range(5):
        r = await remember(
            services,
            tenant="ada",
            thread_id="t1",
            user_text=f"note number {i}",
            at=T0 + timedelta(minutes=5 - i),
        )
        uids.append(r.uid)
    seen: list[tuple[int, int]] = []
    report = await sweep(services, progress=lambda d, t: seen.append((d, t)))
    assert report.done == list(reversed(uids))
    assert seen[-1] == (5, 5)
    statuses = {e.status for e in await services.graph.episodes.get_many("ada", uids)}
    assert statuses == {EpisodeStatus.INDEXED}
