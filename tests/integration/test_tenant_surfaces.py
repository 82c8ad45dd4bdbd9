r"""One tenant rule at every surface over real stores, on every graph backend (`memory.tenant`):
the Python API, REST (in process, as a keyless loopback server answers), the LangGraph store's
namespaces and the write path each refuse an id that breaks the rule with a clear 4xx or error,
and never trim or clean it into another user. `Memory.erase("alice\x00")` touches nothing of
alice's (it deleted her 8 vector points and emptied her search before the rule); `" ada"` and
`"ada"` can never be two people."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from langgraph.store.base import InvalidNamespaceError
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from memory.schema import VECTOR_KINDS, utcnow
from memory.services import Services
from memory.tenant import InvalidTenant
from memory.write.episodes import remember
from serve.api import InvalidInput, Memory, MemoryExport
from serve.rest import router
from serve.store import MnemeStore
from tests.conftest import installed
from tests.contract._support import BAD_TENANTS
from tests.integration.test_api import left_in_stores

SAID = ["I live in Lyon with my cat Miso.", "My locker code at the Vienna gym is 4711."]
BAD = list(BAD_TENANTS.values())
IDS = list(BAD_TENANTS)


async def alice(services: Services) -> Memory:
    mem = Memory(services)
    for text in SAID:
        await mem.add("alice", text)
    await mem.flush()
    return mem


async def what_alice_has(mem: Memory) -> tuple[object, ...]:
    hits = await mem.search("alice", "Where does she live?")
    rows, points = await left_in_stores(mem.services, "alice")
    return (sorted(h.uid for h in hits), rows, points)


def memory_calls(mem: Memory, bad: str) -> dict[str, Callable[[], Awaitable[object]]]:
    export = MemoryExport(user="alice", exported_at=utcnow(), episodes=[])
    return {
        "add": lambda: mem.add(bad, "hello"),
        "search": lambda: mem.search(bad, "Lyon"),
        "get": lambda: mem.get(bad, "uid"),
        "delete": lambda: mem.delete(bad, "uid"),
        "pin": lambda: mem.pin(bad, "uid"),
        "unpin": lambda: mem.unpin(bad, "uid"),
        "history": lambda: mem.history(bad, "uid"),
        "facts": lambda: mem.facts(bad),
        "beliefs": lambda: mem.beliefs(bad),
        "concepts": lambda: mem.concepts(bad),
        "diary": lambda: mem.diary(bad),
        "goals": lambda: mem.goals(bad),
        "emotions": lambda: mem.emotions(bad),
        "export": lambda: mem.export(bad),
        "import": lambda: mem.import_(bad, export),
        "erase": lambda: mem.erase(bad),
    }


@pytest.mark.parametrize("bad", BAD, ids=IDS)
async def test_the_python_api_refuses_every_bad_id_and_touches_nothing(
    services: Services, bad: str
) -> None:
    mem = await alice(services)
    before = await what_alice_has(mem)
    assert before[0] and before[2] > 0
    for name, call in memory_calls(mem, bad).items():
        with pytest.raises(InvalidInput, match="^user ") as refused:
            await call()
        assert "1-128 characters" in str(refused.value), name
    with pytest.raises(InvalidInput):  # the write path below the surfaces, too
        await remember(services, tenant=bad, thread_id="t", user_text="hi", agent_text="")
    assert await what_alice_has(mem) == before


async def test_erasing_alice_with_a_nul_keeps_alice_whole(services: Services) -> None:
    mem = await alice(services)
    rows, points = await left_in_stores(services, "alice")
    before = await what_alice_has(mem)
    with pytest.raises(InvalidInput, match="control character U\\+0000"):
        await mem.erase("alice\x00")
    assert await what_alice_has(mem) == before
    counts = [await services.vectors.count(kind, "alice") for kind in VECTOR_KINDS]
    assert sum(counts) == points > 0 and rows > 0
    report = await mem.erase("alice")  # her own erase still erases her
    assert (report.graph_records, report.vector_points) == (rows, points)
    assert await left_in_stores(services, "alice") == (0, 0)


async def test_a_padded_id_is_never_a_second_person(services: Services) -> None:
    mem = Memory(services)
    await mem.add("ada", "I live in Lyon.")
    await mem.flush()
    for padded in (" ada", "ada ", "\u200bada"):
        with pytest.raises(InvalidInput, match="^user "):
            await mem.add(padded, "I live in Porto.")
        with pytest.raises(InvalidInput):
            await mem.search(padded, "Where do I live?")
    hits = await mem.search("ada", "Where do I live?")
    assert hits and all("Porto" not in h.text for h in hits)
    assert await services.graph.episodes.list_tenants() == ["ada"]


# --------------------------------------------------------------------------- REST, in process


class _Open(AuthenticationBackend):
    """What `serve/auth.py` gives every caller of a server without keys (loopback only)."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        return AuthCredentials(["open"]), SimpleUser("open")


def keyless_app() -> FastAPI:
    app = FastAPI()
    app.include_router(router)
    app.add_middleware(AuthenticationMiddleware, backend=_Open())
    return app


REST_BAD = {k: v for k, v in BAD_TENANTS.items() if k != "lone surrogate"}
"""A lone surrogate cannot be written in a URL (UTF-8 has no encoding of it)."""


@pytest.mark.parametrize("bad", REST_BAD.values(), ids=list(REST_BAD))
async def test_keyless_rest_answers_422_for_every_bad_id(services: Services, bad: str) -> None:
    with installed(services):
        mem = await alice(services)
        before = await what_alice_has(mem)
        transport = httpx.ASGITransport(app=keyless_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            requests: list[tuple[str, str, dict[str, Any]]] = [
                ("POST", "/memories", {"params": {"user": bad}, "json": {"messages": "hi"}}),
                ("GET", "/memories", {"params": {"user": bad, "q": "Lyon"}}),
                ("GET", "/query/graph", {"params": {"user": bad, "q": "Lyon"}}),
                ("GET", "/facts", {"params": {"user": bad}}),
                ("GET", "/memories/some-uid", {"params": {"user": bad}}),
                ("GET", f"/users/{quote(bad, safe='')}/export", {}),
                ("DELETE", f"/users/{quote(bad, safe='')}", {}),
            ]
            for method, path, kwargs in requests:
                response = await http.request(method, path, **kwargs)
                assert response.status_code in (404, 422), (method, path, response.text)
                if response.status_code == 404:
                    assert bad == "", (method, path)  # an empty path segment is no route
                    continue
                detail = response.json()["detail"]
                assert "1-128 characters" in str(detail), (method, path, detail)
            ok = await http.post("/memories", params={"user": "alice"}, json={"messages": "hi"})
            assert ok.status_code == 201
        await mem.flush()
        after = await what_alice_has(mem)
    assert after[1] > before[1]  # the good add was written, to alice
    assert await services.graph.episodes.list_tenants() == ["alice"]  # and nothing else was


# --------------------------------------------------------------------------- the LangGraph store


@pytest.mark.parametrize("bad", BAD, ids=IDS)
async def test_the_store_refuses_a_namespace_naming_a_bad_id(services: Services, bad: str) -> None:
    mem = await alice(services)
    before = await what_alice_has(mem)
    store = MnemeStore(mem)
    with pytest.raises(InvalidNamespaceError):
        await store.aput((bad, "notes"), "k", {"text": "I live in Porto."})
    with pytest.raises(InvalidNamespaceError):
        await store.asearch((bad,), query="Lyon")
    with pytest.raises(InvalidNamespaceError):
        await store.aget((bad, "notes"), "k")
    with pytest.raises(InvalidNamespaceError):
        await store.adelete((bad, "notes"), "k")
    with pytest.raises(InvalidTenant):
        MnemeStore(mem, tenant=bad)
    assert await what_alice_has(mem) == before
