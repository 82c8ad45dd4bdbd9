"""One set of write limits on every surface, over real stores on both graph backends (issue 29,
items 5 and 7; `memory.write.limits`).

- A memory dated later than now plus `FUTURE_SKEW` is refused by the Python API (`add`'s `when`,
  `import_`'s `created_at`), REST (`when`, an import's `created_at`: 422) and the write path
  itself, and never stored; one minute ahead (within the skew) is taken.
- One far-future record already stored (written before the bound) never stops the user's sleep:
  every level runs, says so in its notes and leaves that record as it is. Before, every later
  consolidation refused with "now is before the newest memory".
- An import checks the whole export before it writes: one bad episode anywhere (oversized,
  dated in the future, empty) writes nothing, over the API and REST (413/422). Before, the good
  episodes before the bad one were written.
- The message limit (`MNEME_MAX_MESSAGE_BYTES`) holds on import, the LangGraph store's put (an
  oversized replacement also leaves the old item in place), REST add and MCP's `remember`, as
  it did on `add`. Before, 1 MB went through import and the store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from langgraph_sdk import Auth
from mcp.server.mcpserver.exceptions import ToolError

from graph.consolidation import run_consolidation
from memory.schema import NewEpisode, utcnow
from memory.services import Services
from memory.write.episodes import remember
from memory.write.limits import FUTURE_SKEW
from serve import mcp
from serve.api import InvalidInput, Memory, TooLarge
from serve.auth import check_item_size
from serve.store import MnemeStore
from tests.conftest import installed
from tests.integration.test_tenant_surfaces import keyless_app

FAR = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def _export(user: str, *episodes: dict[str, Any]) -> dict[str, Any]:
    return {
        "user": user,
        "exported_at": utcnow().isoformat(),
        "episodes": [
            {
                "uid": f"{user}-{i}",
                "thread_id": "t",
                "user_text": f"Turn {i}: I water the plants on day {i}.",
                "agent_text": "",
                "created_at": (utcnow() - timedelta(days=10 - i)).isoformat(),
            }
            | episode
            for i, episode in enumerate(episodes)
        ],
    }


async def _rest(services: Services, method: str, path: str, **kwargs: Any) -> httpx.Response:
    with installed(services):
        transport = httpx.ASGITransport(app=keyless_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            return await http.request(method, path, **kwargs)


# --------------------------------------------------------------------------- item 5: dates


async def test_a_far_future_date_is_refused_on_every_surface(services: Services) -> None:
    mem = Memory(services)
    with pytest.raises(InvalidInput, match="^when 9999-12-31.* is in the future"):
        await mem.add("ada", "I moved to Porto.", when=FAR)
    with pytest.raises(InvalidInput, match=r"^episodes\[1\]\.created_at 9999-12-31"):
        await mem.import_("ada", _export("ada", {}, {"created_at": FAR.isoformat()}))
    with pytest.raises(InvalidInput, match="^created_at 9999-12-31"):
        await remember(services, tenant="ada", thread_id="t", user_text="hi", at=FAR)
    later = utcnow() + FUTURE_SKEW + timedelta(minutes=1)
    with pytest.raises(InvalidInput, match="in the future"):
        await mem.add("ada", "I moved to Porto.", when=later)
    add = await _rest(
        services,
        "POST",
        "/memories",
        params={"user": "ada"},
        json={"messages": "I moved to Porto.", "when": "9999-12-31T23:59:59Z"},
    )
    assert add.status_code == 422 and "when 9999-12-31" in add.json()["detail"], add.text
    imported = await _rest(
        services,
        "POST",
        "/users/ada/import",
        json=_export("ada", {"created_at": "9999-12-31T23:59:59+00:00"}),
    )
    assert imported.status_code == 422, imported.text
    assert "episodes[0].created_at 9999-12-31" in imported.json()["detail"]
    assert await services.graph.episodes.count("ada") == 0  # nothing was stored

    soon = utcnow() + timedelta(minutes=1)  # a caller's clock a little ahead: within the skew
    added = await mem.add("ada", "I moved to Porto.", when=soon)
    assert (await mem.get("ada", added.uids[0])).created_at == soon


async def test_one_far_future_record_never_stops_the_users_sleep(services: Services) -> None:
    mem = Memory(services)
    for days, text in ((3, "I live in Lyon and I love cycling."), (2, "Ana is a nurse.")):
        await mem.add("ada", text, when=utcnow() - timedelta(days=days))
    # A record written before dates were bounded: the store takes what it is given.
    bad = await services.graph.episodes.create(
        NewEpisode(
            tenant="ada",
            thread_id="t",
            user_text="I moved to Berlin.",
            agent_text="",
            created_at=FAR,
        )
    )
    await services.graph.episodes.create(  # and another user's, which is none of ada's business
        NewEpisode(tenant="bob", thread_id="t", user_text="Hi.", agent_text="", created_at=FAR)
    )
    await mem.flush()
    before = await services.graph.episodes.get("ada", bad.uid)
    for level in ("micro", "daily", "deep"):
        done = await run_consolidation(services, "ada", level)
        report = done["report"]
        assert report["level"] == level and report["stages"], report
        notes = [n for n in report["notes"] if "dated in the future" in n]
        assert notes == [
            "1 memory dated in the future (the latest 9999-12-31T23:59:59+00:00) left as they "
            "are: no memory can be dated after now; delete them, or export, fix the dates and "
            "import"
        ], report["notes"]
    assert report["rescored"] > 0 or report["kept"] > 0
    after = await services.graph.episodes.get("ada", bad.uid)
    assert after == before  # left as it was: not rescored, archived or forgotten
    # A time before a real memory is still the caller's mistake.
    with pytest.raises(InvalidInput, match="before 'ada''s newest memory"):
        await run_consolidation(
            services, "ada", "micro", (utcnow() - timedelta(days=5)).isoformat()
        )


# --------------------------------------------------------------------------- item 7: whole input


BAD_EPISODES = {
    "oversized last": (2, {"user_text": "x" * 300_000}, 413, "episodes[2].user_text is 300,000"),
    "future middle": (
        1,
        {"created_at": "9999-01-01T00:00:00+00:00"},
        422,
        "episodes[1].created_at",
    ),
    "empty middle": (
        1,
        {"user_text": " ", "agent_text": ""},
        422,
        "episodes[1].user_text is empty",
    ),
}


@pytest.mark.parametrize("case", BAD_EPISODES.values(), ids=list(BAD_EPISODES))
async def test_an_import_with_one_bad_episode_writes_nothing(
    services: Services, case: tuple[int, dict[str, Any], int, str]
) -> None:
    at, bad, status, message = case
    episodes = [{}, {}, {}]
    episodes[at] = bad
    export = _export("ada", *episodes)
    error = TooLarge if status == 413 else InvalidInput
    with pytest.raises(InvalidInput) as refused:
        await Memory(services).import_("ada", export)
    assert await services.graph.episodes.count("ada") == 0  # not the good ones either
    assert isinstance(refused.value, error) and str(refused.value).startswith(message)
    response = await _rest(services, "POST", "/users/ada/import", json=export)
    assert response.status_code == status and message in response.json()["detail"], response.text
    assert await services.graph.episodes.count("ada") == 0
    assert await services.vectors.count("episodes", "ada") == 0

    episodes[at] = {}  # the same export, fixed, goes in whole
    done = await Memory(services).import_("ada", _export("ada", *episodes))
    assert len(done.uids) == 3 and await services.graph.episodes.count("ada") == 3


async def test_one_message_limit_on_every_surface(services: Services) -> None:
    limit = services.settings.max_message_bytes
    huge = "x" * (limit + 1)
    mem = Memory(services)
    with pytest.raises(TooLarge, match=r"messages\[0\]\.content is"):
        await mem.add("ada", huge)
    with pytest.raises(TooLarge, match=r"episodes\[0\]\.agent_text is"):
        await mem.import_("ada", _export("ada", {"agent_text": huge}))
    with pytest.raises(TooLarge, match="^user_text is"):
        await remember(services, tenant="ada", thread_id="t", user_text=huge)

    store = MnemeStore(mem)
    await store.aput(("ada", "notes"), "tea", {"text": "I drink green tea"})
    with pytest.raises(TooLarge, match=f"^value is .* at most {limit:,}"):
        await store.aput(("ada", "notes"), "tea", {"text": huge})
    kept = await store.aget(("ada", "notes"), "tea")  # the old item stays
    assert kept is not None and kept.value == {"text": "I drink green tea"}
    with pytest.raises(TooLarge):
        await store.aput(("ada", "notes"), "diary", {"text": huge})
    put = {"namespace": ("ada", "notes"), "key": "tea", "value": {"text": huge}}
    with pytest.raises(Auth.exceptions.HTTPException) as refused:  # the server's PUT /store/items
        check_item_size(put, limit)
    assert refused.value.status_code == 413 and "MNEME_MAX_MESSAGE_BYTES" in refused.value.detail
    check_item_size(put | {"value": {"text": "I drink green tea"}}, limit)

    for path, body in (
        ("/memories", {"messages": huge}),
        (
            "/memories",
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": huge},
                ]
            },
        ),
        ("/users/ada/import", _export("ada", {"user_text": huge})),
    ):
        response = await _rest(services, "POST", path, params={"user": "ada"}, json=body)
        assert response.status_code == 413, (path, response.text)
        assert "MNEME_MAX_MESSAGE_BYTES" in response.json()["detail"]
    opened = mcp._Opened(services.settings)  # MCP's `remember`, as a connection of ada's
    opened.memory = mem
    token = mcp._user.set("ada")
    try:
        with pytest.raises(ToolError, match=r"messages\[0\]\.content is .*MNEME_MAX_MESSAGE_BYTES"):
            await mcp.build_server(opened).call_tool("remember", {"text": huge})
    finally:
        mcp._user.reset(token)
    assert await services.graph.episodes.count("ada") == 1  # the tea note alone
