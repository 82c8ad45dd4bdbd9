"""The memory REST routes over real HTTP (`langgraph dev` serving serve/webapp.py with API keys),
on the embedded default and, when NEO4J_URI is set, on Neo4j: every route, the tenant bound to
the key, and bad input answered 4xx naming the field (never a 5xx or a trace)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import (
    child_env,
    dev_command,
    free_port,
    neo4j_env,
    start,
    stop,
    wait_http,
)

pytestmark = pytest.mark.slow

USERS = ("alice", "bob", "carol")
_json = {"Content-Type": "application/json"}


def serve(tmp: Path, keys: dict[str, str], **env: str) -> tuple[str, Any]:
    """Start `langgraph dev` on a free port with these keys; (url, process)."""
    port = free_port()
    log = tmp / "server.log"
    proc = start(
        dev_command(port),
        env=child_env(
            tmp / "data", MNEME_API_KEYS=",".join(f"{u}:{k}" for u, k in keys.items()), **env
        ),
        cwd=tmp,
        log=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/ok", proc, 180, log)
    except BaseException:
        stop(proc)
        raise
    return url, proc


@pytest.fixture(scope="module", params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    """A keyed server on each graph backend; (url, {user: key}) with users unique to it."""
    extra = neo4j_env() if request.param == "neo4j" else {}
    run = uuid.uuid4().hex[:8]  # Neo4j is shared between tests: users unique to this server
    keys = {f"{u}-{run}": f"{u}-key-{run}-0123456789" for u in USERS}
    url, proc = serve(tmp_path_factory.mktemp(f"rest-{request.param}"), keys, **extra)
    try:
        yield url, keys
    finally:
        stop(proc)


def client(url: str, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=url, headers=headers, timeout=60)


def processed(http: httpx.Client, uids: list[str], timeout_s: float = 120) -> None:
    """Wait until the background bookkeeping processed these episodes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = [http.get(f"/memories/{u}").json()["status"] for u in uids]
        if all(s == "processed" for s in states):
            return
        time.sleep(0.3)
    pytest.fail(f"bookkeeping did not finish: {states}")


def test_every_route_for_the_key_holder(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    alice, bob = list(keys)[:2]
    with client(url, keys[alice]) as a, client(url, keys[bob]) as b:
        added = a.post(
            "/memories",
            json={
                "messages": [
                    {"role": "user", "content": "I live in Lyon."},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": "We finally moved to Porto last week!"},
                ],
                "when": "2026-01-08T19:00:00Z",
            },
        )
        assert added.status_code == 201, added.text
        uids = added.json()["uids"]
        assert len(uids) == 2
        b.post("/memories", json={"messages": "I live in Lyon."}).raise_for_status()
        processed(a, uids)

        item = a.get(f"/memories/{uids[0]}").json()
        assert item["kind"] == "episode" and "Lyon" in item["text"]
        found = a.get("/memories", params={"q": "where do I live?", "k": 5})
        assert found.status_code == 200
        results = found.json()["results"]
        assert results and "Porto" in results[0]["text"]
        turns = a.get("/memories", params={"q": "Porto", "kinds": "episode"}).json()["results"]
        assert {r["kind"] for r in turns} == {"episode"}

        facts = a.get("/facts").json()
        (home,) = [f for f in facts if f["attribute"] == "home"]
        assert home["value"] == "Porto"
        every = a.get("/facts", params={"history": "true"}).json()
        assert len(every) == len(facts) + 1
        versions = a.get(f"/facts/{home['uid']}/history").json()
        assert [v["value"] for v in versions] == ["Lyon", "Porto"]
        assert a.get("/beliefs").status_code == 200
        assert a.get("/concepts").json() == [] and a.get("/diary").json() == []  # no sleep yet
        assert a.get("/goals").json() == [] and a.get("/emotions").json() == []  # none said
        hope = b.post("/memories", json={"messages": "I'm so excited: I want to learn to sail."})
        processed(b, hope.json()["uids"])
        (goal,) = b.get("/goals").json()
        assert goal["status"] == "active" and "sail" in goal["text"]
        assert b.get("/goals", params={"status": "completed"}).json() == []
        assert [e["name"] for e in b.get("/emotions").json()] == ["excited"]
        assert a.get("/goals").json() == [] and a.get("/emotions").json() == []

        pinned = a.put(f"/memories/{uids[0]}/pin")
        assert pinned.status_code == 200 and pinned.json()["pinned"] is True
        assert a.get(f"/memories/{uids[0]}").json()["pinned"] is True
        assert a.put(f"/memories/{home['uid']}/pin").status_code == 404  # only episodes pin
        unpinned = a.delete(f"/memories/{uids[0]}/pin")
        assert unpinned.status_code == 200 and unpinned.json()["pinned"] is False

        # Another user's uid is not found; naming another user is forbidden.
        assert b.put(f"/memories/{uids[0]}/pin").status_code == 404
        assert b.get(f"/memories/{uids[0]}").status_code == 404
        assert b.delete(f"/memories/{uids[0]}").status_code == 404
        assert b.get(f"/facts/{home['uid']}/history").status_code == 404
        assert b.get("/facts", params={"user": alice}).status_code == 403
        assert b.get("/diary", params={"user": alice}).status_code == 403
        assert b.get("/concepts", params={"user": alice}).status_code == 403
        assert b.get("/goals", params={"user": alice}).status_code == 403
        assert b.get("/emotions", params={"user": alice}).status_code == 403
        assert b.get(f"/users/{alice}/export").status_code == 403
        assert b.delete(f"/users/{alice}").status_code == 403
        theirs = b.get("/memories", params={"q": "Porto"}).json()["results"]
        assert not {r["uid"] for r in theirs} & set(uids)
        assert not any("Porto" in r["text"] for r in theirs)

        exported = a.get(f"/users/{alice}/export")
        assert exported.status_code == 200
        document = exported.json()
        assert [e["uid"] for e in document["episodes"]] == uids

        deleted = a.delete(f"/memories/{uids[1]}")
        assert deleted.status_code == 200 and home["uid"] in deleted.json()["facts_deleted"]
        assert a.get(f"/memories/{uids[1]}").status_code == 404

        erased = a.delete(f"/users/{alice}").json()
        assert erased["graph_records"] > 0
        assert a.get("/facts").json() == [] and a.get(f"/memories/{uids[0]}").status_code == 404
        again = a.delete(f"/users/{alice}").json()
        assert (again["graph_records"], again["vector_points"]) == (0, 0)
        imported = a.post(f"/users/{alice}/import", json=document)
        assert imported.status_code == 200, imported.text
        assert imported.json()["uids"] == uids
        assert [f["value"] for f in a.get("/facts").json() if f["attribute"] == "home"] == ["Porto"]
        assert b.get(f"/memories/{uids[0]}").status_code == 404


def _export(user: str, bad: dict[str, Any]) -> dict[str, Any]:
    """An export of two turns whose second is `bad` (a good one first: nothing may be written)."""
    turn = {"thread_id": "t", "user_text": "I live in Lyon.", "agent_text": ""}
    return {
        "user": user,
        "exported_at": "2026-01-01T00:00:00Z",
        "episodes": [
            {**turn, "uid": "e1", "created_at": "2025-01-01T00:00:00Z"},
            {**turn, "uid": "e2", "created_at": "2025-01-02T00:00:00Z", **bad},
        ],
    }


def test_bad_requests_are_4xx_naming_the_field(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    user = list(keys)[2]
    with client(url, keys[user]) as c, client(url, None) as anonymous:
        assert anonymous.get("/facts").status_code == 401
        with client(url, "wrong-key") as wrong:
            assert wrong.get("/facts").status_code == 401
        cases: list[tuple[str, str, dict[str, Any], int, str]] = [
            ("post", "/memories", {"json": {}}, 422, "messages"),
            ("post", "/memories", {"json": {"messages": ""}}, 422, "messages"),
            ("post", "/memories", {"json": {"messages": [{"role": "x"}]}}, 422, "role"),
            ("post", "/memories", {"json": {"messages": "hi", "when": "soon"}}, 422, "when"),
            ("post", "/memories", {"json": {"messages": "hi", "nope": 1}}, 422, "nope"),
            ("post", "/memories", {"content": b"{not json", "headers": _json}, 422, "json"),
            ("get", "/memories", {}, 422, "q"),
            ("get", "/memories", {"params": {"q": "x", "k": 0}}, 422, "k"),
            ("get", "/memories", {"params": {"q": "x", "k": "many"}}, 422, "k"),
            ("get", "/memories", {"params": {"q": "x", "kinds": "vector"}}, 422, "kinds"),
            ("get", "/memories/missing-uid", {}, 404, "missing-uid"),
            ("delete", "/memories/missing-uid", {}, 404, "missing-uid"),
            ("get", "/facts", {"params": {"history": "maybe"}}, 422, "history"),
            ("get", "/goals", {"params": {"status": "done"}}, 422, "status"),
            ("post", f"/users/{user}/import", {"json": {"format": "zip"}}, 422, "format"),
            (
                "post",
                "/memories",
                {"json": {"messages": "hi", "when": "9999-12-31T23:59:59Z"}},
                422,
                "when 9999-12-31T23:59:59+00:00 is in the future",
            ),
            (
                "post",
                f"/users/{user}/import",
                {"json": _export(user, {"created_at": "9999-12-31T23:59:59Z"})},
                422,
                "episodes[1].created_at 9999-12-31",
            ),
            (
                "post",
                f"/users/{user}/import",
                {"json": _export(user, {"user_text": "x" * (256 * 1024 + 1)})},
                413,
                "episodes[1].user_text is 262,145 bytes",
            ),
        ]
        for method, path, kwargs, status, field in cases:
            response = c.request(method.upper(), path, **kwargs)
            assert response.status_code == status, (path, kwargs, response.text)
            assert field in response.text, (path, response.text)
            assert "Traceback" not in response.text and "/work/" not in response.text
        big = "x" * (256 * 1024 + 1)
        response = c.post("/memories", json={"messages": big})
        assert response.status_code == 413 and "messages[0].content" in response.text
        assert c.get("/facts").json() == []  # nothing was written by any of the above


def test_the_routes_are_typed_in_the_openapi_document(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    spec = httpx.get(f"{url}/openapi.json", timeout=30).json()
    paths = spec["paths"]
    for path, methods in {
        "/memories": {"get", "post"},
        "/memories/{uid}": {"get", "delete"},
        "/facts": {"get"},
        "/facts/{uid}/history": {"get"},
        "/beliefs": {"get"},
        "/goals": {"get"},
        "/emotions": {"get"},
        "/users/{user_id}/export": {"get"},
        "/users/{user_id}/import": {"post"},
        "/users/{user_id}": {"delete"},
        "/query/{store}": {"get"},
    }.items():
        assert methods <= set(paths[path]), path
    schemas = spec["components"]["schemas"]
    names = ("AddRequest", "AddResult", "SearchResponse", "FactView", "MemoryExport", "QueryResult")
    for name in names:
        assert name in schemas
    assert "messages" in schemas["AddRequest"]["properties"]
    assert paths["/threads"]  # the server's own routes are still there


def test_each_store_alone_for_the_caller_only(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    bob, carol = list(keys)[1:]  # carol has nothing else (the test above checked)
    said = ["My sister Beatrice lives in Porto.", "Beatrice plays the cello in an orchestra."]
    with client(url, keys[carol]) as a, client(url, keys[bob]) as b:
        mine = [a.post("/memories", json={"messages": t}).json()["uids"][0] for t in said]
        theirs = [b.post("/memories", json={"messages": t}).json()["uids"][0] for t in said]
        processed(a, mine)
        processed(b, theirs)

        graph = a.get("/query/graph", params={"q": "What does Beatrice do?", "k": 5})
        assert graph.status_code == 200, graph.text
        body = graph.json()
        assert body["store"] == "graph" and body["entities"] == ["Beatrice"]
        assert body["results"] and {r["uid"] for r in body["results"]} <= set(mine)
        assert all(0 < r["score"] <= 1 and r["matched"] is None for r in body["results"])

        vector = a.get("/query/vector", params={"q": "Who plays the cello?", "k": 5}).json()
        assert vector["store"] == "vector" and vector["entities"] == []
        assert "cello" in vector["results"][0]["matched"]  # a turn, or a window around it
        assert mine[1] in {r["uid"] for r in vector["results"]}
        assert {r["uid"] for r in vector["results"]} <= set(mine)
        scores = [r["score"] for r in vector["results"]]
        assert scores == sorted(scores, reverse=True)

        assert b.get("/query/vector", params={"q": "cello", "user": carol}).status_code == 403
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("/query/sql", {"q": "x"}, "store"),
            ("/query/graph", {}, "q"),
            ("/query/graph", {"q": "   "}, "q"),
            ("/query/vector", {"q": "x", "k": 0}, "k"),
            ("/query/vector", {"q": "x", "k": 101}, "k"),
        ]
        for path, params, field in cases:
            response = a.get(path, params=params)
            assert response.status_code == 422, (path, params, response.text)
            assert field in response.text and "Traceback" not in response.text
