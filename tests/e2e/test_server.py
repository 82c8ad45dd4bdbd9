"""`langgraph dev` end to end: threads and runs over HTTP (/threads, /runs/wait, /runs/stream),
the thread state, bookkeeping completed in the background, the bookkeeping and consolidation
graphs, bad input."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import child_env, dev_command, free_port, start, wait_http

pytestmark = pytest.mark.slow

FACT = "My bicycle is a green Bianchi that I bought in Verona."
QUESTION = "What bicycle do I have?"


def statuses(db: Path) -> dict[str, str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
        return dict(conn.execute("SELECT uid, status FROM episodes").fetchall())


def wait_processed(db: Path, uids: list[str], timeout_s: float = 180) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = statuses(db)
        if all(found.get(uid) == "processed" for uid in uids):
            return found
        time.sleep(0.5)
    pytest.fail(f"bookkeeping did not finish: {statuses(db)}")


def stream_events(client: httpx.Client, path: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    with client.stream("POST", path, json=body, timeout=300) as response:
        response.raise_for_status()
        event = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                events.append((event, json.loads(line.split(":", 1)[1])))
    return events


@pytest.fixture
def server(tmp_path: Path, processes) -> str:
    port = free_port()
    log = tmp_path / "server.log"
    proc = start(
        dev_command(port),
        env=child_env(tmp_path / "data"),
        cwd=tmp_path,  # the dev server keeps its own state in the working directory
        log=log,
    )
    processes.append(proc)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/ok", proc, 180, log)
    return url


def test_threads_runs_state_and_bookkeeping(server: str, tmp_path: Path) -> None:
    db = tmp_path / "data" / "graph.sqlite3"
    with httpx.Client(base_url=server, timeout=300) as client:
        thread = client.post("/threads", json={}).json()["thread_id"]
        told = client.post(
            f"/threads/{thread}/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": FACT}]},
                "context": {"user_id": "e2e-user", "timezone": "Europe/Rome"},
            },
        ).json()
        assert told["messages"][-1]["type"] == "ai" and told["messages"][-1]["content"]
        uid = told["episode"]["uid"]
        assert told["episode"]["stored"] and told["episode"]["scheduled"]
        assert told["temporal"]["timezone"] == "Europe/Rome"

        state = client.get(f"/threads/{thread}/state").json()
        assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]
        assert state["values"]["episode"]["uid"] == uid

        wait_processed(db, [uid])

        other = client.post("/threads", json={}).json()["thread_id"]
        events = stream_events(
            client,
            f"/threads/{other}/runs/stream",
            {
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": QUESTION}]},
                "context": {"user_id": "e2e-user"},
                "stream_mode": ["updates", "values"],
            },
        )
        nodes = [next(iter(data)) for event, data in events if event == "updates"]
        # the evidence gate runs beside retrieval; remember joins both branches
        # the user's side is durable before anything else runs
        assert nodes[:2] == ["record", "route"] and nodes[-1] == "remember"
        assert sorted(nodes) == sorted(
            [
                "record",
                "route",
                "retrieve",
                "rerank",
                "respond",
                "ess_gate",
                "remember",
            ]
        )
        assert nodes.index("retrieve") < nodes.index("rerank") < nodes.index("respond")
        final = [data for event, data in events if event == "values"][-1]
        assert "Bianchi" in final["messages"][-1]["content"]
        assert final["memories"][0]["episode_uid"] == uid
        assert final["memories"][0]["thread_id"] == thread
        wait_processed(db, [uid, final["episode"]["uid"]])

        stranger = client.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": QUESTION}]},
                "context": {"user_id": "someone-else"},
            },
        ).json()
        assert "Bianchi" not in stranger["messages"][-1]["content"]

        again = client.post(
            "/runs/wait",
            json={
                "assistant_id": "bookkeeping",
                "input": {"episode_uid": uid},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert again["status"] == "processed"

        slept = client.post(
            "/runs/wait",
            json={
                "assistant_id": "consolidation",
                "input": {"level": "deep"},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert slept["report"]["tenant"] == "e2e-user" and slept["report"]["level"] == "deep"
        assert slept["report"]["rescored"] >= 2  # this user's episodes, nobody else's
        assert slept["report"]["forgotten"] == 0  # nothing older than an hour


def test_bad_input_gets_clear_answers(server: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=server, timeout=300) as client:
        hello = {
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": "hi"}]},
        }
        bad_user = client.post("/runs/wait", json=hello | {"context": {"user_id": "   "}})
        assert bad_user.status_code == 422 and "user_id" in bad_user.json()["detail"]

        no_context = client.post("/runs/wait", json=hello)
        assert no_context.status_code == 422  # no shared `default` tenant
        assert "user_id is required" in no_context.json()["detail"]

        empty = client.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": ""}]},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert "empty" in empty["messages"][-1]["content"]

        text = "z" * 200_000
        huge = client.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": text}]},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert "200,000 characters" in huge["messages"][-1]["content"]
        assert huge["episode"]["outcome"] == "stored"
        assert len(huge["messages"][0]["content"]) < 9000  # the thread keeps a bounded copy
        db = tmp_path / "data" / "graph.sqlite3"
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
            row = conn.execute(
                "SELECT user_text FROM episodes WHERE uid = ?", (huge["episode"]["uid"],)
            ).fetchone()
        assert row[0] == text  # stored verbatim

        too_big = client.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": "z" * 300_000}]},
                "context": {"user_id": "e2e-user"},
            },
        )
        assert too_big.status_code == 413

        missing = client.post(
            "/runs/wait",
            json={
                "assistant_id": "bookkeeping",
                "input": {"episode_uid": "does-not-exist"},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert missing["__error__"]["error"] == "NotFound"

        bad_level = client.post(
            "/runs/wait",
            json={
                "assistant_id": "consolidation",
                "input": {"level": "weekly"},
                "context": {"user_id": "e2e-user"},
            },
        ).json()
        assert bad_level["__error__"]["error"] == "InvalidInput"
        assert "micro, daily, deep" in bad_level["__error__"]["message"]


def test_published_schemas_describe_every_field(server: str) -> None:
    """Studio renders these schemas as forms: every context and input field says what it is."""
    with httpx.Client(base_url=server, timeout=60) as client:
        for graph_id, inputs in [
            ("agent", {"messages"}),
            ("bookkeeping", {"episode_uid"}),
            ("consolidation", {"level", "now"}),
        ]:
            found = client.post("/assistants/search", json={"graph_id": graph_id}).json()
            schemas = client.get(f"/assistants/{found[0]['assistant_id']}/schemas").json()
            context = schemas["context_schema"]["properties"]
            assert "user_id" in context and "user_id" in schemas["context_schema"]["required"]
            for name, prop in context.items():
                assert prop.get("description"), f"{graph_id} context field {name}"
            assert context["timezone"]["default"] == "UTC"
            assert context["memory_token_budget"]["default"] == 2000
            published = schemas["input_schema"]["properties"]
            assert set(published) == inputs
            for name, prop in published.items():
                assert prop.get("description"), f"{graph_id} input field {name}"
