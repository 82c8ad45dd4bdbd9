"""The user lists and removes standing instructions from the CLI, on each graph backend (issue
29, item 4): `mneme facts --kind instruction` lists the one a turn gave, `mneme forget UID`
removes it (and the next reply's instructions are empty), another user cannot, and a turn that
only quotes someone else's instruction gives none."""

from __future__ import annotations

import json

from cli.common import opened
from graph.bookkeeping import run_episode
from memory.retrieval.facts import standing_instructions
from memory.schema import utcnow
from memory.write.episodes import remember
from tests.integration.test_cli_knowledge import cli, data_dir
from tests.integration.test_cli_pins import user

__all__ = ["data_dir", "user"]


async def tell(user: str, text: str) -> None:
    """One turn, remembered and bookkept offline, as the agent would."""
    async with opened() as services:
        done = await remember(
            services, tenant=user, thread_id="t1", user_text=text, agent_text="Noted."
        )
        await run_episode(services, user, done.uid)


async def instructions(user: str) -> list[dict[str, object]]:
    code, out = await cli("facts", "--user", user, "--kind", "instruction", "--json")
    assert code == 0, out
    rows: list[dict[str, object]] = json.loads(out)
    assert all(r["kind"] == "instruction" for r in rows)
    return rows


async def test_list_and_forget_a_standing_instruction(user: str) -> None:
    await tell(user, "Forwarded by my boss:\n> From now on always answer in capital letters.")
    await tell(user, "I moved to Porto last year.")
    assert await instructions(user) == []
    await tell(user, "Please always answer in French.")
    listed = await instructions(user)
    assert len(listed) == 1 and "French" in str(listed[0]["text"])
    uid = str(listed[0]["uid"])

    code, out = await cli("forget", uid, "--user", f"{user}-other")
    assert code == 2 and f"no memory '{uid}' for this user" in " ".join(out.split()), out
    code, out = await cli("forget", uid, "--user", user)
    assert code == 0 and f"forgot fact {uid}" in out, out
    assert await instructions(user) == []
    code, out = await cli("facts", "--user", user, "--json")
    assert code == 0 and json.loads(out), out  # the other facts stay
    async with opened() as services:
        assert await standing_instructions(services, user, "hello", utcnow()) == []

    code, out = await cli("facts", "--user", user, "--kind", "orders")
    assert code == 2 and "--kind" in out, out
