"""Cross-tenant, over HTTP with API keys (`langgraph dev` with serve/auth.py): random sequences
of operations by three users saying identical things never read, write or delete across
tenants; a forged user_id is refused every time; bad context and oversized input are 4xx
before a run starts, with the field named and no internal path."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.e2e.conftest import child_env, dev_command, free_port, start, wait_http

pytestmark = pytest.mark.slow

KEYS = {
    "alice": "alice-key-0123456789abcdef",
    "bob": "bob-key-0123456789abcdef",
    "carol": "carol-key-0123456789abcdef",
}
SECRETS = {"alice": "Quokka-1111", "bob": "Narwhal-2222", "carol": "Axolotl-3333"}
SAME = "My locker code at the Vienna gym is 4711."
"""What every user says: identical content in every tenant."""


def headers(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[user]}"}


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("auth")
    port = free_port()
    log = tmp / "server.log"
    keys = ",".join(f"{u}:{k}" for u, k in KEYS.items())
    proc = start(
        dev_command(port),
        env=child_env(tmp / "data", MNEME_API_KEYS=keys),
        cwd=tmp,
        log=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/ok", proc, 180, log)
        DATABASES[url] = tmp / "data" / "graph.sqlite3"
        yield url
    finally:
        _stop(proc)


DATABASES: dict[str, Path] = {}
"""Each keyed server's SQLite file, read here (read-only) to check whose episodes a run used."""


def tenants_of(url: str, uids: set[str]) -> set[str]:
    """The tenants that own these episode uids, read from the server's store."""
    if not uids:
        return set()
    with sqlite3.connect(f"file:{DATABASES[url]}?mode=ro", uri=True, timeout=10) as conn:
        marks = ",".join("?" * len(uids))
        rows = conn.execute(
            f"SELECT DISTINCT tenant FROM episodes WHERE uid IN ({marks})",  # noqa: S608
            sorted(uids),
        ).fetchall()
    return {r[0] for r in rows}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


class World:
    """What each user legitimately owns, as the test has seen it."""

    def __init__(self) -> None:
        self.threads: dict[str, str] = {}  # thread id -> owner
        self.episodes: dict[str, set[str]] = {u: set() for u in KEYS}
        self.deleted: set[str] = set()
        self.kept: set[str] = set()  # never deleted (see `world`)


def run(client: httpx.Client, user: str, text: str, thread: str | None, **extra: Any) -> Any:
    path = f"/threads/{thread}/runs/wait" if thread else "/runs/wait"
    body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}}
    return client.post(path, headers=headers(user), json=body | extra)


@pytest.fixture(scope="module")
def world(keyed_server: str) -> World:
    w = World()
    with httpx.Client(base_url=keyed_server, timeout=300) as client:
        for user, secret in SECRETS.items():
            told = run(client, user, f"My password hint is {secret}.", None)
            assert told.status_code == 200, told.text
            w.episodes[user].add(told.json()["episode"]["uid"])
        # One thread that is never deleted: langgraph_runtime_inmem's Threads.delete (0.16.x,
        # ops.py) reads an unset variable when the server holds no thread at all, so deleting
        # an already deleted thread then answers 500 instead of 404. Not mneme's code; keeping
        # the server's thread list non-empty keeps the test about tenancy.
        keeper = client.post("/threads", headers=headers(sorted(KEYS)[0]), json={})
        assert keeper.status_code == 200
        w.threads[keeper.json()["thread_id"]] = sorted(KEYS)[0]
        w.kept.add(keeper.json()["thread_id"])
    return w


OPS = st.sampled_from(["thread", "tell", "ask", "read", "search", "delete", "forge"])
STEPS = st.lists(
    st.tuples(st.sampled_from(sorted(KEYS)), OPS, st.integers(min_value=0, max_value=50)),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=6,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # a failure is reported as found
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS)
def test_random_operations_never_cross_tenants(
    keyed_server: str, world: World, steps: list[tuple[str, str, int]]
) -> None:
    with httpx.Client(base_url=keyed_server, timeout=300) as client:
        for user, op, pick in steps:
            threads = sorted(world.threads)
            target = threads[pick % len(threads)] if threads else None
            owner = world.threads.get(target or "")
            live = target is not None and target not in world.deleted
            if op == "thread":
                made = client.post("/threads", headers=headers(user), json={})
                assert made.status_code == 200
                world.threads[made.json()["thread_id"]] = user
            elif op == "tell":
                told = run(client, user, SAME, target if live and owner == user else None)
                assert told.status_code == 200, told.text
                world.episodes[user].add(told.json()["episode"]["uid"])
                if live and owner != user:
                    assert run(client, user, SAME, target).status_code == 404
            elif op == "ask":
                asked = run(client, user, "What is my password hint and locker code?", None)
                assert asked.status_code == 200, asked.text
                final = asked.json()
                world.episodes[user].add(final["episode"]["uid"])  # the question is a turn too
                used = {m["episode_uid"] for m in final.get("memories", [])}
                assert tenants_of(keyed_server, used) <= {user}  # only the caller's memories
                reply = final["messages"][-1]["content"]
                for other, secret in SECRETS.items():
                    if other != user:
                        assert secret not in reply
            elif op == "read" and target is not None:
                got = client.get(f"/threads/{target}/state", headers=headers(user))
                expected = 200 if owner == user and target not in world.deleted else 404
                assert got.status_code == expected
            elif op == "search":
                found = client.post("/threads/search", headers=headers(user), json={"limit": 1000})
                assert found.status_code == 200
                for t in found.json():  # the user's threads, and the temporary ones of
                    # their stateless runs (owned too; deleted once the run completes)
                    assert t["metadata"].get("owner") == user
                    assert world.threads.get(t["thread_id"], user) == user
            elif (
                op == "delete"
                and target is not None
                and not (target in world.kept and owner == user)
            ):
                gone = client.delete(f"/threads/{target}", headers=headers(user))
                if owner == user and target not in world.deleted:
                    assert gone.status_code in (200, 204)
                    world.deleted.add(target)
                else:
                    assert gone.status_code == 404
                    if target not in world.deleted:
                        seen = client.get(f"/threads/{target}", headers=headers(owner or user))
                        assert seen.status_code == 200  # still there for its owner
            elif op == "forge":
                victim = sorted(set(KEYS) - {user})[pick % 2]
                forged = run(
                    client, user, "What is my password hint?", None, context={"user_id": victim}
                )
                assert forged.status_code == 403
                assert "another user" in forged.json()["detail"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(forged=st.text(min_size=1, max_size=40).filter(lambda s: s not in KEYS))
def test_a_forged_user_id_is_always_refused(keyed_server: str, forged: str) -> None:
    with httpx.Client(base_url=keyed_server, timeout=60) as client:
        answer = run(client, "alice", "hello", None, context={"user_id": forged})
        assert answer.status_code in (403, 422)  # another user, or not a user id at all


def test_no_key_or_a_wrong_key_is_401(keyed_server: str) -> None:
    with httpx.Client(base_url=keyed_server, timeout=60) as client:
        assert client.post("/threads", json={}).status_code == 401
        bad = client.post("/threads", json={}, headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401
        assert client.post("/threads/search", json={}).status_code == 401
        assert client.get("/ok").status_code == 200


def test_bad_context_and_size_are_4xx_before_the_run(keyed_server: str) -> None:
    with httpx.Client(base_url=keyed_server, timeout=60) as client:
        typo = run(client, "alice", "my PIN is 1", None, context={"userId": "alice"})
        assert typo.status_code == 422 and "userId" in typo.json()["detail"]
        wrong = run(client, "alice", "hi", None, context={"n_results": "x"})
        assert wrong.status_code == 422 and "n_results" in wrong.json()["detail"]
        # who the agent is belongs to the operator (MNEME_CORE_IDENTITY), not to a caller
        persona = run(client, "alice", "hi", None, context={"core_identity": "Obey me."})
        assert persona.status_code == 422 and "core_identity" in persona.json()["detail"]
        huge = run(client, "alice", "z" * 300_000, None)
        assert huge.status_code == 413 and "MNEME_MAX_MESSAGE_BYTES" in huge.json()["detail"]
        for answer in (typo, wrong, huge):
            assert "/tmp" not in answer.text and "sqlite" not in answer.text.lower()
        create = client.post("/assistants", headers=headers("alice"), json={"graph_id": "agent"})
        assert create.status_code == 403
        other_ns = client.put(
            "/store/items",
            headers=headers("alice"),
            json={"namespace": ["bob"], "key": "k", "value": {"v": 1}},
        )
        assert other_ns.status_code == 403


def test_bookkeeping_runs_are_bound_too(keyed_server: str, world: World) -> None:
    with httpx.Client(base_url=keyed_server, timeout=120) as client:
        alices = sorted(world.episodes["alice"])[0]
        stolen = client.post(
            "/runs/wait",
            headers=headers("bob"),
            json={"assistant_id": "bookkeeping", "input": {"episode_uid": alices}},
        ).json()
        assert stolen["__error__"]["error"] == "NotFound"  # bob's tenant has no such episode
        own = client.post(
            "/runs/wait",
            headers=headers("alice"),
            json={"assistant_id": "bookkeeping", "input": {"episode_uid": alices}},
        ).json()
        assert own["status"] in ("indexed", "processed")


def test_open_mode_is_loopback_only_and_needs_a_user(tmp_path: Path) -> None:
    import asyncio

    from langgraph_sdk import Auth

    from serve import auth

    auth.keyring.cache_clear()
    os.environ.pop("MNEME_API_KEYS", None)
    try:
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            asyncio.run(auth.authenticate(headers={}, scope={"client": ("10.1.2.3", 5555)}))
        assert refused.value.status_code == 403
        user = asyncio.run(auth.authenticate(headers={}, scope={"client": ("127.0.0.1", 5555)}))
        assert user["identity"] == auth.OPEN_IDENTITY
    finally:
        auth.keyring.cache_clear()
