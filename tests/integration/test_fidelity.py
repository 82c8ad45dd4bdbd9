"""The fidelity check on every graph backend (real stores, the real embedder, offline): the
agent's account of a person (facts about them, beliefs from their turns) against their own
words; deep sleep's report and `mneme fidelity` show what drifted."""

from __future__ import annotations

import json
from pathlib import Path

from memory.schema import Belief, EvidenceKind, Fact
from memory.services import Services
from memory.sleep.fidelity import MIN_BASELINE, check_fidelity
from memory.sleep.levels import Level
from tests.integration.test_chapters import NOW, STORY
from tests.integration.test_cli_knowledge import DATA, cli, data_dir
from tests.integration.test_consolidation import T0, forget_only, sleep, tell

__all__ = ["data_dir"]

HOME = [(0.5, "I live in Lyon, in a small flat near the old town."), (50, "We moved to Porto.")]


async def test_the_account_is_checked_against_the_persons_words(services: Services) -> None:
    uids = await tell(services, "ada", [*STORY, *HOME])
    graph = services.graph
    lyon_turn, clay_turn = uids[-2], uids[6]
    faithful = await check_fidelity(services, "ada")
    assert faithful.checked >= 1 and faithful.drifted == []  # what was extracted, as said

    # A fact whose source no longer says it; one with no source left; a belief resting only on
    # a turn whose fact the person has since replaced.
    await graph.facts.add(
        Fact(uid="peanuts", tenant="ada", text="is allergic to peanuts", valid_from=T0),
        clay_turn,  # "Pottery class tonight: I threw my first clay bowl on the wheel."
    )
    await graph.facts.add(Fact(uid="orphan", tenant="ada", text="has a cat", valid_from=T0))
    lyon = await graph.beliefs.upsert(
        Belief(uid="lyon", tenant="ada", topic="lyon", statement="Lyon suits this person")
    )
    await graph.beliefs.add_evidence("ada", lyon_turn, lyon.uid, EvidenceKind.SUPPORTS, 0.6)
    stated = await graph.facts.get_many("ada", await graph.facts.stated_by("ada", lyon_turn))
    assert stated and all(f.superseded_by for f in stated), "the move replaced the Lyon fact"

    found = await check_fidelity(services, "ada")
    drifted = {d.uid: d for d in found.drifted}
    assert set(drifted) == {"peanuts", "orphan", "lyon"}
    assert drifted["orphan"].reason == "no_evidence" and drifted["orphan"].evidence == []
    assert drifted["peanuts"].reason == "unlike_its_words"
    assert drifted["peanuts"].evidence == [clay_turn]
    assert "of their other turns are closer to it than its own words" in drifted["peanuts"].detail
    assert drifted["lyon"].reason == "superseded" and "Porto" in drifted["lyon"].detail
    assert found.checked == faithful.checked + 3
    assert (await check_fidelity(services, "bob")).checked == 0  # another person: nothing

    report = await sleep(services, "ada", Level.DEEP, NOW, classify=forget_only())
    assert report.fidelity == (await check_fidelity(services, "ada")).summary()
    assert {d["uid"] for d in report.fidelity["drifted"]} >= {"peanuts", "orphan"}
    assert any(n.startswith("fidelity: ") for n in report.notes)


async def test_few_turns_are_not_ranked(services: Services) -> None:
    uids = await tell(services, "ada", STORY[: MIN_BASELINE - 2])
    await services.graph.facts.add(
        Fact(uid="odd", tenant="ada", text="is allergic to peanuts", valid_from=T0), uids[0]
    )
    assert (await check_fidelity(services, "ada")).drifted == []  # too few words to rank by


async def test_mneme_fidelity_prints_what_drifted(data_dir: Path, tmp_path: Path) -> None:
    code, out = await cli("fidelity", "--user", "nora", "--json")
    assert code == 0 and json.loads(out) == {"checked": 0, "drifted": []}
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation.pop("questions", None)
    path = tmp_path / "nora.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    assert (await cli("ingest", str(path), "--user", "nora"))[0] == 0
    code, out = await cli("fidelity", "--user", "nora", "--json")
    found = json.loads(out)
    assert code == 0 and found["checked"] > 0, out
    code, out = await cli("fidelity", "--user", "nora")
    assert code == 0, out
    assert f"{len(found['drifted'])} of {found['checked']} records drifted from nora's words" in out
