"""`mneme recall`, `facts`, `doctor`, `pin` and `unpin` while `langgraph dev` holds the embedded
vector index (its lock), on SQLite and Neo4j: with MNEME_SERVER_URL and a key they go through
the server's REST routes; without, or with a wrong key or user, they stop with a message saying
what to do."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import BIN, child_env, neo4j_env
from tests.e2e.test_rest import client, processed, serve, stop

pytestmark = pytest.mark.slow
Server = tuple[str, dict[str, str], Path, dict[str, str]]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def held(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A keyed server holding its data directory; (url, {user: key}, data dir, backend env)."""
    extra = neo4j_env() if request.param == "neo4j" else {}
    run = uuid.uuid4().hex[:8]
    keys = {f"{u}-{run}": f"{u}-key-{run}-0123456789" for u in ("alice", "bob")}
    tmp = tmp_path_factory.mktemp(f"held-{request.param}")
    url, proc = serve(tmp, keys, **extra)
    try:
        yield url, keys, tmp / "data", extra
    finally:
        stop(proc)


def mneme(
    data: Path, extra: dict[str, str], *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "mneme"), *args],
        env=child_env(data, **extra, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_read_commands_go_through_the_server_holding_the_stores(held: Server) -> None:
    url, keys, data, extra = held
    alice, bob = list(keys)
    with client(url, keys[alice]) as a:
        added = a.post("/memories", json={"messages": "My locker code is 4711 and I live in Lyon."})
        assert added.status_code == 201, added.text
        processed(a, added.json()["uids"])
        served_facts = a.get("/facts").json()
    through = {"MNEME_SERVER_URL": url, "MNEME_SERVER_KEY": keys[alice]}

    found = mneme(data, extra, "recall", "locker code", "--user", alice, "--json", **through)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and "4711" in results[0]["text"]
    assert "asking the server" in found.stderr
    table = mneme(data, extra, "recall", "locker code", "--user", alice, **through)
    assert table.returncode == 0 and "4711" in table.stdout, table.stderr

    facts = mneme(data, extra, "facts", "--user", alice, "--json", **through)
    assert facts.returncode == 0, facts.stderr
    assert [f["uid"] for f in json.loads(facts.stdout)] == [f["uid"] for f in served_facts]
    assert any(f["text"] for f in served_facts)

    doctor = mneme(data, extra, "doctor", **through)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "held by process" in doctor.stdout and "answers" in doctor.stdout


def test_pin_and_unpin_go_through_the_server_holding_the_stores(held: Server) -> None:
    url, keys, data, extra = held
    alice, bob = list(keys)
    with client(url, keys[alice]) as a:
        added = a.post("/memories", json={"messages": "Keep this: my passport expires in May."})
        assert added.status_code == 201, added.text
        uid = added.json()["uids"][0]
        processed(a, [uid])
        through = {"MNEME_SERVER_URL": url, "MNEME_SERVER_KEY": keys[alice]}
        done = mneme(data, extra, "pin", uid, "--user", alice, "--json", **through)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["pinned"] is True
        assert a.get(f"/memories/{uid}").json()["pinned"] is True
        done = mneme(data, extra, "unpin", uid, "--user", alice, **through)
        assert done.returncode == 0 and f"unpinned {uid}" in done.stdout, done.stderr
        assert a.get(f"/memories/{uid}").json()["pinned"] is False

        unknown = mneme(data, extra, "pin", "no-such-uid", "--user", alice, **through)
        assert unknown.returncode == 2 and "no episode 'no-such-uid'" in unknown.stderr
        as_bob = {"MNEME_SERVER_URL": url, "MNEME_SERVER_KEY": keys[bob]}
        denied = mneme(data, extra, "pin", uid, "--user", bob, **as_bob)  # not bob's turn
        assert denied.returncode == 2 and f"no episode '{uid}'" in denied.stderr
        assert a.get(f"/memories/{uid}").json()["pinned"] is False


def test_without_the_server_or_its_key_they_say_how(held: Server) -> None:
    url, keys, data, extra = held
    alice, bob = list(keys)
    cases: list[tuple[tuple[str, ...], dict[str, str], int, str]] = [
        (("recall", "x", "--user", alice), {}, 2, "MNEME_SERVER_URL"),
        (("facts", "--user", alice), {}, 2, "MNEME_SERVER_URL"),
        (("doctor",), {}, 1, "MNEME_SERVER_URL"),
        (("recall", "x", "--user", alice), {"MNEME_SERVER_URL": url}, 2, "MNEME_SERVER_KEY"),
        (
            ("recall", "x", "--user", bob),
            {"MNEME_SERVER_URL": url, "MNEME_SERVER_KEY": keys[alice]},
            2,
            "--user must be the user of MNEME_SERVER_KEY",
        ),
        (
            ("recall", "x", "--user", alice, "--recipe", "TEMPORAL"),
            {"MNEME_SERVER_URL": url, "MNEME_SERVER_KEY": keys[alice]},
            2,
            "SIMPLE",
        ),
        (
            ("recall", "x", "--user", alice),
            {"MNEME_SERVER_URL": "http://127.0.0.1:9"},
            2,
            "does not answer",
        ),
    ]
    for args, env, code, message in cases:
        done = mneme(data, extra, *args, **env)
        out = " ".join((done.stdout + done.stderr).split())  # rich wraps long lines
        assert done.returncode == code, (args, env, out)
        assert message in out, (args, out)
        assert "Traceback" not in out
