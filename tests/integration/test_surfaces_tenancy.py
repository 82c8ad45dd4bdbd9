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
    run = _Run(services, random.Random(seed))
    for _step in range(24):
        user, op = run.rng.choice(USERS), run.rng.choice(OPS)
        others = [u for u in USERS if u != user]
        await getattr(run, op)(user, others)
    for user in USERS:
        await run.mem.erase(user)
        assert await left_in_stores(services, user) == (0, 0)


class _Run:
    """One random sequence of operations: what each user wrote, and one method per operation
    `(user, others)` asserting that nothing of the others reaches `user`."""

    def __init__(self, services: Services, rng: random.Random) -> None:
        self.services, self.rng = services, rng
        self.mem = Memory(services)
        self.store = MnemeStore(self.mem)
        self.owned: dict[str, set[str]] = {u: set() for u in USERS}  # episode uids each wrote
        self.keys: dict[str, set[str]] = {u: set() for u in USERS}

    async def mine(self, user: str, uid: str) -> bool:
        try:
            item = await self.mem.get(user, uid)
        except NotFound:
            return False
        return item.uid == uid

    async def add(self, user: str, others: list[str]) -> None:
        self.owned[user] |= set((await self.mem.add(user, self.rng.choice(SAID))).uids)
        await self.mem.flush()

    async def put(self, user: str, others: list[str]) -> None:
        key = f"k{self.rng.randrange(3)}"
        await self.store.aput((user, "notes"), key, {"text": self.rng.choice(SAID)})
        self.keys[user].add(key)
        await self.mem.flush()

    async def search(self, user: str, others: list[str]) -> None:
        for hit in await self.mem.search(user, self.rng.choice(SAID)):
            for uid in hit.sources:
                assert await self.mine(user, uid), (user, uid)
                assert not any([await self.mine(o, uid) for o in others])

    async def store_search(self, user: str, others: list[str]) -> None:
        hits = await self.store.asearch((user,), query=self.rng.choice(SAID))
        assert {h.namespace[0] for h in hits} <= {user}
        listed = await self.store.asearch((user, "notes"))
        assert {i.key for i in listed} <= self.keys[user]

    async def get_other(self, user: str, others: list[str]) -> None:
        for other in others:
            for uid in list(self.owned[other])[:3]:
                assert not await self.mine(user, uid)
                with pytest.raises(NotFound):
                    await self.mem.delete(user, uid)

    async def delete(self, user: str, others: list[str]) -> None:
        if not self.owned[user]:
            return
        uid = self.rng.choice(sorted(self.owned[user]))
        if await self.mine(user, uid):
            await self.mem.delete(user, uid)
        self.owned[user].discard(uid)

    async def export(self, user: str, others: list[str]) -> None:
        exported = await self.mem.export(user)
        theirs = set().union(*(self.owned[o] for o in others))
        assert not {e.uid for e in exported.episodes} & theirs
        assert exported.user == user

    async def erase(self, user: str, others: list[str]) -> None:
        before = {o: await left_in_stores(self.services, o) for o in others}
        await self.mem.erase(user)
        assert await left_in_stores(self.services, user) == (0, 0)
        assert {o: await left_in_stores(self.services, o) for o in others} == before
        self.owned[user], self.keys[user] = set(), set()
