"""`MnemeStore` (serve/store.py) on every graph backend with the real embedder: the behaviour
langgraph's own store tests check on its in-memory and SQLite stores (get/put/delete, batch
order, namespaces and list_namespaces conditions, filters, pagination, keys that look like SQL
or Cypher, JSON round trips, the sync API from another thread), plus mneme's tenant isolation
and search through mneme's retrieval."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from graph.bookkeeping import run_episode
from memory.schema import EpisodeSource
from memory.services import Services
from serve.api import Memory
from serve.store import MnemeStore
from tests.conftest import make_settings

VALUE: dict[str, Any] = {
    "text": "Ada drinks green tea every morning",
    "n": 3,
    "ratio": 0.25,
    "ok": True,
    "none": None,
    "nested": {"list": [1, "two", {"three": 3.0}], "empty": {}},
    "unicode": "café 東京 🙂 \u202e",
    "control": "tab\tnew\nline\x01",
}
INJECTIONS = [
    "'; DROP TABLE episodes; --",
    'key") MATCH (n) DETACH DELETE n //',
    "1 OR 1=1",
    "$tenant",
    "../../etc/passwd",
    "%s %d {0}",
]


@pytest.fixture
async def store(services: Services) -> MnemeStore:
    return MnemeStore(Memory(services))


@pytest.fixture
def services_factory(tmp_path: Path) -> Callable[[], Awaitable[Services]]:
    """Opens services on a fresh embedded memory (in whichever loop awaits it)."""

    async def open_() -> Services:
        return await Services.open(
            make_settings(tmp_path), pipeline=run_episode, sweep_interval_s=None
        )

    return open_


async def test_put_get_replace_delete_round_trip_json(store: MnemeStore) -> None:
    ns = ("ada", "memories")
    await store.aput(ns, "k1", VALUE)
    item = await store.aget(ns, "k1")
    assert item is not None and item.value == VALUE and item.key == "k1" and item.namespace == ns
    assert item.created_at == item.updated_at
    await store.aput(ns, "k1", {"text": "replaced"})
    assert (await store.aget(ns, "k1")).value == {"text": "replaced"}  # type: ignore[union-attr]
    assert len(await store.asearch(ns)) == 1  # replaced, not added
    await store.adelete(ns, "k1")
    assert await store.aget(ns, "k1") is None
    await store.adelete(ns, "k1")  # deleting a missing key is a no-op
    assert await store.aget(ns, "never") is None
    assert await store.aget(("ada", "elsewhere"), "k1") is None


async def test_batch_runs_operations_in_order(store: MnemeStore) -> None:
    ns = ("ada", "batch")
    results = await store.abatch(
        [
            PutOp(ns, "a", {"v": 1}),
            GetOp(ns, "a"),
            PutOp(ns, "a", {"v": 2}),
            GetOp(ns, "a"),
            PutOp(ns, "b", {"v": 3}),
            SearchOp(ns, filter={"v": {"$gte": 2}}),
            PutOp(ns, "a", None),
            GetOp(ns, "a"),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("ada",)),)),
        ]
    )
    assert results[0] is None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert results[3].value == {"v": 2}  # type: ignore[union-attr]
    assert sorted(i.key for i in results[5]) == ["a", "b"]  # type: ignore[union-attr]
    assert results[7] is None
    assert results[8] == [ns]


async def test_keys_that_look_like_queries_are_just_keys(store: MnemeStore) -> None:
    ns = ("ada", "odd")
    for i, key in enumerate(INJECTIONS):
        await store.aput(ns, key, {"i": i})
    for i, key in enumerate(INJECTIONS):
        assert (await store.aget(ns, key)).value == {"i": i}  # type: ignore[union-attr]
    assert len(await store.asearch(ns, limit=50)) == len(INJECTIONS)
    odd_ns = ("ada", "'; DROP TABLE facts; --", "MATCH (n) DELETE n")
    await store.aput(odd_ns, "k", {"ok": 1})
    assert (await store.aget(odd_ns, "k")).value == {"ok": 1}  # type: ignore[union-attr]


async def test_filters_and_pagination(store: MnemeStore) -> None:
    ns = ("ada", "docs")
    for i in range(6):
        colour = "red" if i % 2 else "blue"
        await store.aput(ns, f"d{i}", {"i": i, "colour": colour, "tags": {"x": i}})
    listed = await store.asearch(ns, limit=10)
    assert [i.key for i in listed] == [f"d{i}" for i in range(5, -1, -1)]  # newest first
    assert {i.key for i in await store.asearch(ns, filter={"colour": "red"})} == {"d1", "d3", "d5"}
    assert {i.key for i in await store.asearch(ns, filter={"i": {"$gt": 1, "$lte": 3}})} == {
        "d2",
        "d3",
    }
    assert {i.key for i in await store.asearch(ns, filter={"colour": {"$ne": "red"}})} == {
        "d0",
        "d2",
        "d4",
    }
    assert await store.asearch(ns, filter={"i": {"$gt": "a string"}}) == []
    assert [i.key for i in await store.asearch(ns, filter={"tags": {"x": 4}})] == ["d4"]
    page = await store.asearch(ns, limit=2, offset=2)
    assert [i.key for i in page] == ["d3", "d2"]
    assert await store.asearch(ns, offset=10) == []


async def test_list_namespaces_with_conditions_depth_and_pages(store: MnemeStore) -> None:
    spaces = [
        ("ada", "a", "b", "c"),
        ("ada", "a", "b", "d"),
        ("ada", "a", "x"),
        ("ada", "users", "123"),
        ("ada", "users", "456", "settings"),
    ]
    for ns in spaces:
        await store.aput(ns, "k", {"v": 1})
    assert await store.alist_namespaces(prefix=("ada",)) == sorted(spaces)
    assert await store.alist_namespaces(prefix=("ada", "a")) == sorted(spaces[:3])
    assert await store.alist_namespaces(prefix=("ada", "*", "b")) == sorted(spaces[:2])
    assert await store.alist_namespaces(prefix=("ada",), suffix=("d",)) == [spaces[1]]
    assert await store.alist_namespaces(prefix=("ada",), suffix=("*", "settings")) == [spaces[4]]
    assert await store.alist_namespaces(prefix=("ada",), max_depth=2) == [
        ("ada", "a"),
        ("ada", "users"),
    ]
    assert await store.alist_namespaces(prefix=("ada",), limit=2, offset=1) == sorted(spaces)[1:3]
    with pytest.raises(InvalidNamespaceError):
        await store.alist_namespaces()  # which user's?


async def test_search_uses_mneme_retrieval(services: Services, store: MnemeStore) -> None:
    ns = ("ada", "memories")
    await store.aput(ns, "tea", {"text": "Ada drinks green tea every morning"})
    await store.aput(ns, "job", {"text": "Ada works as a nurse at St Mary's hospital"})
    await store.aput(("ada", "other"), "bike", {"text": "Ada cycles to work"})
    await Memory(services).flush()
    hits = await store.asearch(ns, query="what does Ada drink in the morning?")
    assert [h.key for h in hits][0] == "tea"
    assert hits[0].score is not None and hits[0].score > 0
    assert {h.namespace for h in hits} == {ns}  # only under the prefix
    every = await store.asearch(("ada",), query="cycles to work", limit=1)
    assert [h.key for h in every] == ["bike"]
    filtered = await store.asearch(ns, query="hospital", filter={"text": "nope"})
    assert filtered == []
    # The items are the user's memories: the Python API finds them too.
    found = await Memory(services).search("ada", "green tea")
    assert "green tea" in found[0].text
    # An app's agent wrote them down; the user did not say them (even in the first person).
    (hit,) = await Memory(services).search("ada", "green tea", k=1, kinds=("episode",))
    tea = await services.graph.episodes.get("ada", hit.uid)
    assert tea is not None and tea.source is EpisodeSource.INFERRED


async def test_tenants_are_the_first_label_and_never_cross(
    services: Services, store: MnemeStore
) -> None:
    same = {"text": "My locker code is 4711"}
    for user in ("ada", "bob", "cyd"):
        await store.aput((user, "memories"), "locker", same)
    await Memory(services).flush()
    await store.adelete(("bob", "memories"), "locker")
    assert await store.aget(("bob", "memories"), "locker") is None
    assert (await store.aget(("ada", "memories"), "locker")).value == same  # type: ignore[union-attr]
    for user in ("ada", "cyd"):
        hits = await store.asearch((user,), query="locker code")
        assert [h.namespace[0] for h in hits] == [user]
    assert await store.asearch(("bob",), query="locker code") == []
    assert await store.alist_namespaces(prefix=("bob",)) == []
    bound = MnemeStore(Memory(services), tenant="ada")
    assert (await bound.aget(("ada", "memories"), "locker")) is not None
    for call in (
        bound.aget(("cyd", "memories"), "locker"),
        bound.aput(("cyd", "memories"), "x", {"v": 1}),
        bound.asearch(("cyd",), query="locker"),
    ):
        with pytest.raises(InvalidNamespaceError):
            await call
    assert await bound.alist_namespaces() == [("ada", "memories")]


async def test_bad_values_are_refused_before_writing(store: MnemeStore) -> None:
    ns = ("ada", "bad")
    for value in ({"x": float("nan")}, {"x": object()}):
        with pytest.raises(ValueError, match="JSON"):
            await store.aput(ns, "k", value)
    with pytest.raises(ValueError, match="ttl"):
        await store.aput(ns, "k", {"v": 1}, ttl=5)
    with pytest.raises(ValueError, match="index"):
        await store.aput(ns, "k", {"v": 1}, index=False)
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {"v": 1})
    with pytest.raises(ValueError, match="key"):
        await store.aput(ns, "", {"v": 1})
    assert await store.asearch(ns) == []


async def test_an_index_field_list_is_accepted_and_the_item_indexed_whole(
    store: MnemeStore,
) -> None:
    ns = ("ada", "indexed")
    await store.aput(ns, "k", {"text": "Ada swims on Sundays", "n": 1}, index=["text"])
    item = await store.aget(ns, "k")
    assert item is not None and item.value == {"text": "Ada swims on Sundays", "n": 1}


def test_the_sync_api_works_from_another_thread(services_factory: Any) -> None:
    """`put`/`get`/`search` called from a thread other than the store's event loop."""
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        holder["loop"] = loop

        async def main() -> None:
            services = await services_factory()
            holder["services"] = services
            holder["store"] = MnemeStore(Memory(services))
            holder["stop"] = stop = asyncio.Event()
            ready.set()
            await stop.wait()
            await services.close()

        loop.run_until_complete(main())
        loop.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        assert ready.wait(120)
        store: MnemeStore = holder["store"]
        store.put(("ada", "sync"), "k", {"v": [1, 2]})
        assert store.get(("ada", "sync"), "k").value == {"v": [1, 2]}  # type: ignore[union-attr]
        assert [i.key for i in store.search(("ada",))] == ["k"]
        assert store.list_namespaces(prefix=("ada",)) == [("ada", "sync")]
        store.delete(("ada", "sync"), "k")
        assert store.get(("ada", "sync"), "k") is None
    finally:
        if "stop" in holder:
            holder["loop"].call_soon_threadsafe(holder["stop"].set)
        thread.join(60)
