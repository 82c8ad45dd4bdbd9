"""Cross-tenant, in process, on every graph backend: random sequences of add, search, get,
delete, export and erase by three users saying identical things, through the Python API and
the LangGraph store at once. 0 results, exports or deletes reach another user, and after an
erase the stores hold 0 rows and 0 points of that user (read from the stores directly).
REST and MCP bind the same `Memory` calls to the authenticated user; their own isolation is in
tests/e2e/test_rest.py and test_mcp.py."""

from __future__ import annotations

import random

import pytest

from memory.services import Services
from serve.api import Memory, NotFound
from serve.store import MnemeStore
from tests.integration.test_api import left_in_stores

USERS = ("ada", "bob", "cyd")
SAID = [
    "My locker code at the Vienna gym is 4711.",
    "I live in Lyon with my cat Miso.",
    "I work as a nurse at St Mary's hospital.",
    "We finally moved to Porto last week!",
]
OPS = ("add", "put", "search", "store_search", "get_other", "delete", "export", "erase")


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_operations_never_cross_tenants(services: Services, seed: int) -> None:
    rng = random.Random(seed)
    mem = Memory(services)
    store = MnemeStore(mem)
    owned: dict[str, set[str]] = {u: set() for u in USERS}  # episode uids each user wrote
    keys: dict[str, set[str]] = {u: set() for u in USERS}

    async def mine(user: str, uid: str) -> bool:
        try:
            item = await mem.get(user, uid)
        except NotFound:
            return False
        return item.uid == uid

    for _step in range(24):
        user, op = rng.choice(USERS), rng.choice(OPS)
        others = [u for u in USERS if u != user]
        if op == "add":
            owned[user] |= set((await mem.add(user, rng.choice(SAID))).uids)
            await mem.flush()
        elif op == "put":
            key = f"k{rng.randrange(3)}"
            await store.aput((user, "notes"), key, {"text": rng.choice(SAID)})
            keys[user].add(key)
            await mem.flush()
        elif op == "search":
            for hit in await mem.search(user, rng.choice(SAID)):
                for uid in hit.sources:
                    assert await mine(user, uid), (user, uid)
                    assert not any([await mine(o, uid) for o in others])
        elif op == "store_search":
            hits = await store.asearch((user,), query=rng.choice(SAID))
            assert {h.namespace[0] for h in hits} <= {user}
            listed = await store.asearch((user, "notes"))
            assert {i.key for i in listed} <= keys[user]
        elif op == "get_other":
            for other in others:
                for uid in list(owned[other])[:3]:
                    assert not await mine(user, uid)
                    with pytest.raises(NotFound):
                        await mem.delete(user, uid)
        elif op == "delete" and owned[user]:
            uid = rng.choice(sorted(owned[user]))
            if await mine(user, uid):
                await mem.delete(user, uid)
            owned[user].discard(uid)
        elif op == "export":
            exported = await mem.export(user)
            theirs = set().union(*(owned[o] for o in others))
            assert not {e.uid for e in exported.episodes} & theirs
            assert exported.user == user
        elif op == "erase":
            before = {o: await left_in_stores(services, o) for o in others}
            await mem.erase(user)
            assert await left_in_stores(services, user) == (0, 0)
            assert {o: await left_in_stores(services, o) for o in others} == before
            owned[user], keys[user] = set(), set()
    for user in USERS:
        await mem.erase(user)
        assert await left_in_stores(services, user) == (0, 0)
