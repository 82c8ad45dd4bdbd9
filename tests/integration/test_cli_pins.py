"""`mneme pin` / `mneme unpin` on the local stores of each graph backend, as a user runs them
(settings from the environment): the pin is stored, unpinning clears it, and an unknown uid,
another user's uid or a blank one is a clear error (exit 2)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from cli.common import opened
from tests.conftest import NEO4J_URI, require_neo4j
from tests.integration.test_cli_knowledge import DATA, cli, data_dir

__all__ = ["data_dir"]


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def user(request: pytest.FixtureRequest, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The user of the test on each backend (unique on the shared Neo4j, which is not wiped)."""
    if request.param == "sqlite":
        return "nora"
    require_neo4j()
    monkeypatch.setenv("NEO4J_URI", str(NEO4J_URI))
    return f"nora-{uuid.uuid4().hex[:8]}"


async def pinned_in_store(user: str, uid: str) -> bool:
    async with opened() as services:
        episode = await services.graph.episodes.get(user, uid)
    assert episode is not None
    return episode.pinned


async def test_pin_and_unpin_a_turn(user: str, tmp_path: Path) -> None:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation["sessions"] = conversation["sessions"][:1]
    conversation.pop("questions", None)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", user)
    assert code == 0, out
    code, out = await cli("recall", "Croix-Rousse", "--user", user, "--json")
    assert code == 0, out
    uid = next(r["uid"] for r in json.loads(out)["results"] if r["kind"] == "episode")

    code, out = await cli("pin", uid, "--user", user, "--json")
    assert code == 0, out
    item = json.loads(out)
    assert (item["uid"], item["kind"], item["pinned"]) == (uid, "episode", True)
    assert await pinned_in_store(user, uid)
    code, out = await cli("pin", uid, "--user", user)  # idempotent
    assert code == 0 and f"pinned {uid}" in out, out

    code, out = await cli("unpin", uid, "--user", user)
    assert code == 0 and f"unpinned {uid}" in out, out
    assert not await pinned_in_store(user, uid)

    for args, message in [
        (("pin", "no-such-uid", "--user", user), "no episode 'no-such-uid' for this user"),
        (("pin", uid, "--user", f"{user}-other"), f"no episode '{uid}' for this user"),
        (("unpin", "no-such-uid", "--user", user), "no episode 'no-such-uid' for this user"),
        (("pin", " ", "--user", user), "uid must be a non-empty string"),
    ]:
        code, out = await cli(*args)
        assert code == 2, (args, out)
        assert message in " ".join(out.split()), (args, out)
    assert not await pinned_in_store(user, uid)  # the other user's pin changed nothing
