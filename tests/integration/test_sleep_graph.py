"""The sleep graph's shape, on every graph backend (real SQLite or Neo4j, Qdrant in memory, the
real embedder, offline heuristics): each stage runs alone on a hand-built state, each level runs
exactly its stages, and the four ways in (`mneme consolidate`, the server's schedule, `mneme
eval retrieval --consolidate`, `mneme bench sleep`) all run the one graph, reflection included."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.eval_retrieval import run_eval
from bench.sleep import bench_sleep
from graph.consolidation import graph, run_consolidation, stages
from memory.beliefs.apperception import load
from memory.embeddings.embedders import Embedder
from memory.schema import Belief
from memory.services import Services
from memory.sleep.chapters import load_chapters
from memory.sleep.diary import write_diary
from memory.sleep.levels import Level, last_runs
from memory.sleep.plan import PLAN_KEY, Decision, save_plan
from memory.sleep.report import Report
from memory.sleep.rescore import score
from memory.sleep.schedule import Intervals
from nodes import sleep as stage
from serve.schedule import run_due
from tests.conftest import installed, make_settings
from tests.integration.test_cli_knowledge import DATA, cli, data_dir
from tests.integration.test_consolidation import T0, forget_only, tell
from tests.integration.test_eval_cli import CONVERSATION
from tests.unit.fake_chat import asleep, runtime

__all__ = ["data_dir"]

MICRO = ["resume", "links", "rescore", "sessions"]
DAILY = ["resume", "links", "rescore", "expire", "concepts", "diary", "sessions"]
DEEP = [
    "resume",
    "links",
    "rescore",
    "expire",
    "forget",
    "beliefs",
    "goals",
    "apperception",
    "concepts",
    "diary",
    "chapters",
    "reflect",
    "fidelity",
    "sessions",
]
"""Each level's stages in the order they run, written out here rather than read from the graph."""

STORY = [
    (0, "busy this week"),
    (0, "I want to run a marathon."),
    (1, "ok"),
    (2, "haha nice"),
    (3, "Watched a documentary about penguins in Antarctica."),
]
"""Four days of turns: a passing remark, a goal, small talk, a faded detail."""

LATE = T0 + timedelta(days=900)
"""Long after the story: everything has aged, the remark has expired, the links have faded."""


async def _plan_to_forget(services: Services, uids: list[str]) -> None:
    await save_plan(services, "solo", {uids[2]: Decision.FORGET})  # a killed run's plan


async def _link(services: Services, uids: list[str]) -> None:
    await services.graph.episodes.record_access("solo", [uids[2], uids[3]], T0 + timedelta(days=4))


async def _unsupported_belief(services: Services, uids: list[str]) -> None:
    belief = Belief(
        uid="b1", tenant="solo", topic="tea", statement="tea", valence=0.3, confidence=0.4
    )
    await services.graph.beliefs.upsert(belief.model_copy(update={"updated_at": T0}))


async def _diary(services: Services, uids: list[str]) -> None:
    await write_diary(services, "solo", LATE)


PREPARE: dict[str, Callable[[Services, list[str]], Awaitable[None]]] = {
    "chapters": _diary,
    "resume": _plan_to_forget,
    "links": _link,
    "beliefs": _unsupported_belief,
}


async def _check(name: str, out: dict[str, Any], services: Services, uids: list[str]) -> None:
    """What each stage alone must have done to the story."""
    graph_store = services.graph
    if name == "resume":
        assert (out["resumed"], out["forgotten"]) == (1, 1)
        assert await graph_store.state.get("solo", PLAN_KEY) == "[]"
        assert await graph_store.episodes.get("solo", uids[2]) is None
    elif name == "links":
        assert out["links_pruned"] == 1 and await graph_store.coretrieval.list("solo") == []
    elif name == "rescore":
        assert out["rescored"] == len(STORY)
        scored, _ = await score(services, "solo", LATE)
        stored = {e.uid: e for e in await graph_store.episodes.get_many("solo", uids)}
        assert all(stored[c.episode.uid].salience == pytest.approx(c.salience) for c in scored)
    elif name == "expire":
        assert out["expired"] == 1
        (remark,) = await graph_store.episodes.get_many("solo", [uids[0]])
        assert remark.archived
    elif name == "forget":
        assert out["forgotten"] == 1 and await graph_store.episodes.get("solo", uids[3]) is None
    elif name == "beliefs":
        assert out["beliefs_decayed"] + out["beliefs_removed"] == 1
    elif name == "goals":
        assert out["goals"] == 1 and len(await graph_store.goals.list("solo")) == 1
    elif name == "apperception":
        stored_score = await load(graph_store, "solo")
        assert stored_score is not None and stored_score.score == out["apperception"]
    elif name == "concepts":
        assert out["notes"][0].startswith("concepts: ")
    elif name == "diary":
        assert out["notes"] == ["diary: 4 of 4 days written"]
        assert len(await graph_store.diary.list("solo")) == 4
    elif name == "chapters":  # four days of one month, no concept: one chapter, no theme
        assert out["notes"] == ["chapters: 1 (0 themes)"]
        (chapter,) = await load_chapters(graph_store, "solo")
        assert (chapter.days, chapter.themes) == (4, [])
    elif name == "reflect":
        assert out["reflection"]["ran"] is True
    elif name == "fidelity":  # the goal fact about the user, said in the turn it rests on
        assert out["fidelity"] == {"checked": 1, "drifted": []}
    elif name == "sessions":
        assert out["summaries"] == 4  # one session per day's thread, all over by now


@pytest.mark.parametrize("name", DEEP)
async def test_each_stage_runs_alone_on_a_hand_built_state(services: Services, name: str) -> None:
    uids = await tell(services, "solo", STORY)
    if name in PREPARE:
        await PREPARE[name](services, uids)
    node = getattr(stage, name)
    with installed(services):
        if name == "forget":  # the caller's classifier, as `run_consolidation(classify=...)`
            context = stage.SleepContext(user_id="solo", classify=forget_only(uids[3]))
            update = await node(asleep("deep", LATE), runtime_of(context))
        else:
            update = await node(asleep("deep", LATE), runtime(user_id="solo"))

    assert list(update["stages"]) == [name]
    out = update["stages"][name]
    assert out["seconds"] >= 0.0
    Report(tenant="solo", level=Level.DEEP, now=LATE).add(name, out)  # every key a report field
    await _check(name, out, services, uids)


def runtime_of(context: Any) -> Any:
    """A `Runtime` carrying `context` as is."""
    from langgraph.runtime import Runtime

    return Runtime(context=context)


async def test_finish_folds_the_stages_into_the_report(services: Services) -> None:
    await tell(services, "fin", STORY[:1])
    state = asleep("daily", LATE) | {
        "stages": {
            "resume": {"resumed": 2, "archived": 1, "notes": ["finished 2"], "seconds": 0.5},
            "expire": {"expired": 3, "protected": 1, "seconds": 0.25},
            "concepts": {"notes": ["concepts: 0"], "seconds": 0.125},
        }
    }
    with installed(services):
        update = await stage.finish(state, runtime(user_id="fin"))

    report = update["report"]
    assert (report["resumed"], report["archived"], report["expired"]) == (2, 1, 3)
    assert report["protected"] == 1 and report["notes"] == ["finished 2", "concepts: 0"]
    assert report["stages"] == {"resume": 0.5, "expire": 0.25, "concepts": 0.125}
    assert report["reflection"] is None and report["apperception"] is None
    assert (await last_runs(services, "fin")) == {"daily": LATE.isoformat()}
    with pytest.raises(ValueError, match="reported 'weather', not a report field"):
        Report(tenant="fin", level=Level.DAILY, now=LATE).add("links", {"weather": 1})


@pytest.mark.parametrize(
    ("level", "expected"), [("micro", MICRO), ("daily", DAILY), ("deep", DEEP)]
)
async def test_each_level_runs_exactly_its_stages(
    services: Services, level: str, expected: list[str]
) -> None:
    await tell(services, "lv", STORY)
    state = await run_consolidation(services, "lv", level, LATE.isoformat())
    assert list(state["stages"]) == expected
    assert list(state["report"]["stages"]) == expected
    assert state["report"]["level"] == level
    assert (state["report"]["reflection"] is not None) is (level == "deep")
    assert (await last_runs(services, "lv"))[level] == LATE.isoformat()


def test_the_graph_shows_its_stages() -> None:
    drawn = graph.get_graph(xray=True).nodes
    assert {f"sleep:{name}" for name in DEEP} <= set(drawn)
    assert set(stages.get_graph().nodes) == {"__start__", "__end__", "finish", *DEEP}


async def test_mneme_consolidate_runs_the_graph(data_dir: Path, tmp_path: Path) -> None:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation["sessions"] = conversation["sessions"][:2]
    conversation.pop("questions", None)
    path = tmp_path / "nora.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", "nora")
    assert code == 0, out
    code, out = await cli(
        "consolidate", "--user", "nora", "--level", "deep", "--now", "2030-01-01", "--json"
    )
    assert code == 0, out
    report = json.loads(out)
    assert list(report["stages"]) == DEEP and report["reflection"]["ran"] is True


async def test_the_schedule_runs_the_graph(services: Services) -> None:
    await tell(services, "sc", STORY)
    every = Intervals(micro=timedelta(hours=1), daily=timedelta(days=1), deep=timedelta(days=7))
    (report,) = await run_due(services, every, LATE)
    assert report["level"] == "deep" and list(report["stages"]) == DEEP


async def test_the_eval_runs_the_graph(tmp_path: Path, embedder: Embedder) -> None:
    data = tmp_path / "tiny.memeval.jsonl"
    data.write_text(json.dumps(CONVERSATION) + "\n", encoding="utf-8")
    settings = make_settings(tmp_path)
    result = await run_eval(data, settings=settings, embedder=embedder, consolidate_level="deep")
    slept = result.summary["consolidation"]
    assert slept["level"] == "deep" and list(slept["stage_seconds"]) == DEEP
    assert slept["rescored"] > 0
    assert "reflections" in slept and "reflection_revisions" in slept


async def test_the_sleep_bench_runs_the_graph() -> None:
    report = (await bench_sleep(episodes=100, seed=5, deep_every_days=120)).as_dict()
    slept = report["consolidation"]
    assert list(slept["stage_seconds"]) == DEEP
    assert slept["runs"] >= 3 and "reflections" in slept
