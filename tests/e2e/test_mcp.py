"""`mneme mcp` end to end with the MCP client library over stdio: the seven tools on the
embedded default, one user per connection from its key, another user's memory unreachable, and
bad calls answered as tool errors without internals."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import BIN, child_env, free_port, neo4j_env, start

pytestmark = pytest.mark.slow

KEYS = {"ada": "ada-mcp-key-0123456789", "bob": "bob-mcp-key-0123456789"}


def params(
    data: Path,
    key: str | None,
    *args: str,
    keys: dict[str, str] = KEYS,
    extra: dict[str, str] | None = None,
) -> StdioServerParameters:
    env = child_env(
        data, MNEME_API_KEYS=",".join(f"{u}:{k}" for u, k in keys.items()), **(extra or {})
    )
    if key is not None:
        env["MNEME_MCP_KEY"] = key
    return StdioServerParameters(command=str(BIN / "mneme"), args=["mcp", *args], env=env)


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def backend(request: pytest.FixtureRequest) -> tuple[dict[str, str], dict[str, str]]:
    """(environment, {role: user}) of each graph backend; users unique on the shared Neo4j."""
    if request.param == "sqlite":
        return {}, {"ada": "ada", "bob": "bob"}
    env = neo4j_env()
    run = uuid.uuid4().hex[:8]
    return env, {"ada": f"ada-{run}", "bob": f"bob-{run}"}


def payload(result: Any) -> Any:
    """A tool result's structured value (lists come wrapped as {"result": [...]})."""
    assert not result.is_error, result.content
    value = result.structured_content
    if value is None:
        return json.loads(result.content[0].text)
    return value.get("result", value) if set(value) == {"result"} else value


async def test_the_tools_over_stdio_act_for_the_key_holder_only(
    tmp_path: Path, backend: tuple[dict[str, str], dict[str, str]]
) -> None:
    extra, users = backend
    keys = {users[role]: key for role, key in KEYS.items()}
    data = tmp_path / "data"
    ada_params = params(data, KEYS["ada"], keys=keys, extra=extra)
    async with stdio_client(ada_params) as (read, write):
        async with ClientSession(read, write) as ada:
            await ada.initialize()
            tools = {t.name for t in (await ada.list_tools()).tools}
            assert tools == {
                "remember",
                "recall",
                "facts",
                "beliefs",
                "forget",
                "pin_memory",
                "unpin_memory",
            }
            first = payload(await ada.call_tool("remember", {"text": "I live in Lyon."}))
            second = payload(
                await ada.call_tool("remember", {"text": "We finally moved to Porto last week!"})
            )
            hits = payload(await ada.call_tool("recall", {"query": "Porto", "k": 3}))
            assert any("Porto" in h["text"] for h in hits)
            facts = payload(await ada.call_tool("facts", {}))
            assert [f["value"] for f in facts if f["attribute"] == "home"] == ["Porto"]
            assert payload(await ada.call_tool("beliefs", {})) == []
            kept = payload(await ada.call_tool("pin_memory", {"uid": first["uids"][0]}))
            assert (kept["uid"], kept["pinned"]) == (first["uids"][0], True)
            again = payload(await ada.call_tool("unpin_memory", {"uid": first["uids"][0]}))
            assert again["pinned"] is False
            bad = await ada.call_tool("pin_memory", {"uid": "no-such-uid"})
            assert bad.is_error and "no episode 'no-such-uid'" in bad.content[0].text
            forgot = payload(await ada.call_tool("forget", {"uid": second["uids"][0]}))
            assert forgot["kind"] == "episode" and forgot["facts_deleted"]
            bad = await ada.call_tool("forget", {"uid": "no-such-uid"})
            assert bad.is_error and "no memory" in bad.content[0].text
            bad = await ada.call_tool("recall", {"query": " "})
            assert bad.is_error and "query" in bad.content[0].text
            assert "/" not in bad.content[0].text
    # The data directory is free again: bob, on his own connection, sees none of it.
    async with stdio_client(params(data, KEYS["bob"], keys=keys, extra=extra)) as (read, write):
        async with ClientSession(read, write) as bob:
            await bob.initialize()
            assert payload(await bob.call_tool("recall", {"query": "Lyon"})) == []
            assert payload(await bob.call_tool("facts", {"history": True})) == []
            denied = await bob.call_tool("forget", {"uid": first["uids"][0]})
            assert denied.is_error and "no memory" in denied.content[0].text
            denied = await bob.call_tool("pin_memory", {"uid": first["uids"][0]})
            assert denied.is_error and "no episode" in denied.content[0].text


@pytest.mark.parametrize(
    ("key", "args", "message"),
    [
        (None, (), "MNEME_MCP_KEY"),
        ("wrong-key", (), "MNEME_MCP_KEY"),
        (None, ("--user", "ada"), "MNEME_MCP_KEY"),  # keys configured: --user is not enough
    ],
)
async def test_a_connection_without_a_valid_key_does_not_start(
    tmp_path: Path, key: str | None, args: tuple[str, ...], message: str
) -> None:
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog, pytest.raises(Exception):  # noqa: B017
        async with stdio_client(params(tmp_path / "data", key, *args), errlog=errlog) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
    assert message in errors.read_text()


def wait_listening(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll until the server answers anything (401 without a key)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"mneme mcp --http exited:\n{log.read_text()[-3000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    pytest.fail(f"mneme mcp --http did not listen:\n{log.read_text()[-3000:]}")


async def test_the_tools_over_streamable_http_act_for_each_request_key(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    log = tmp_path / "mcp.log"
    env = child_env(tmp_path / "data", MNEME_API_KEYS=",".join(f"{u}:{k}" for u, k in KEYS.items()))
    processes.append(start([str(BIN / "mneme"), "mcp", "--http", str(port)], env, tmp_path, log))
    url = f"http://127.0.0.1:{port}/mcp"
    wait_listening(url, processes[-1], log)
    async with httpx.AsyncClient(timeout=10) as plain:
        assert (await plain.post(url, json={})).status_code == 401
        bad = await plain.post(url, json={}, headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401

    async def session_of(user: str) -> Any:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEYS[user]}"}, timeout=60)
        return client, streamable_http_client(url, http_client=client)

    client, transport = await session_of("ada")
    async with client, transport as (read, write), ClientSession(read, write) as ada:
        await ada.initialize()
        payload(await ada.call_tool("remember", {"text": "My locker code is 4711."}))
        hits = payload(await ada.call_tool("recall", {"query": "locker code"}))
        assert hits and "4711" in hits[0]["text"]
    client, transport = await session_of("bob")
    async with client, transport as (read, write), ClientSession(read, write) as bob:
        await bob.initialize()
        assert payload(await bob.call_tool("recall", {"query": "locker code"})) == []
