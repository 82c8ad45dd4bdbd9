"""Session summaries: splitting a thread into sessions, the extractive summary offline, the
bookkeeping stage (finishes the session before a gap; idempotent), the LLM summary with a
scripted model (validated, extractive fallback), consolidation finishing the last session, a
crash between the vector and the graph write repaired by the next pass, and forgetting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.retrieval.ranking import estimate_tokens
from memory.schema import Episode, NewEpisode
from memory.sleep.plan import forget_episode
from memory.stores.graph.episodes import episode_record
from memory.write.episodes import remember
from memory.write.sessions import (
    MAX_SESSION_TURNS,
    SUMMARY_TOKENS,
    extractive_draft,
    has_ended,
    point_id,
    session_uid,
    split_sessions,
    summarise_sessions,
    summarise_thread,
    write_summary,
)
from nodes.sessions import sessions
from tests.unit.fake_chat import loaded, runtime

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GAP = timedelta(hours=6)


def turn(i: int, at: datetime, user: str = "We talked.", agent: str = "Noted.") -> Episode:
    return episode_record(
        NewEpisode(
            uid=f"e{i:03d}",
            tenant="alice",
            thread_id="t1",
            user_text=user,
            agent_text=agent,
            created_at=at,
        )
    )


# --------------------------------------------------------------------------- splitting


def test_a_gap_or_a_new_day_starts_a_session() -> None:
    times = [
        T0,
        T0 + timedelta(hours=2),
        T0 + timedelta(hours=8, minutes=30),  # 17:30, 6.5 h idle: after the gap
        T0 + timedelta(hours=13, minutes=30),  # 22:30, within the gap
        T0 + timedelta(hours=15, minutes=30),  # 00:30 the next day: a new day
    ]
    split = split_sessions([turn(i, t) for i, t in enumerate(times)], GAP)
    assert [[e.uid for e in s] for s in split] == [
        ["e000", "e001"],
        ["e002", "e003"],
        ["e004"],
    ]
    assert split_sessions([], GAP) == []


def test_exactly_the_gap_stays_in_the_session_and_long_sessions_are_cut() -> None:
    split = split_sessions([turn(0, T0), turn(1, T0 + GAP)], GAP)
    assert len(split) == 1
    many = [turn(i, T0 + timedelta(seconds=i)) for i in range(MAX_SESSION_TURNS + 5)]
    assert [len(s) for s in split_sessions(many, GAP)] == [MAX_SESSION_TURNS, 5]


def test_a_session_has_ended_after_the_gap_or_its_day() -> None:
    session = [turn(0, T0)]
    assert not has_ended(session, T0 + timedelta(hours=5), GAP)
    assert has_ended(session, T0 + GAP + timedelta(seconds=1), GAP)
    assert has_ended(session, T0.replace(hour=23, minute=59) + timedelta(minutes=2), GAP)


def test_the_uid_depends_on_tenant_thread_and_start_only() -> None:
    assert session_uid("alice", "t1", T0) == session_uid("alice", "t1", T0)
    assert session_uid("alice", "t1", T0) != session_uid("bob", "t1", T0)
    assert session_uid("alice", "t1", T0) != session_uid("alice", "t2", T0)
    assert session_uid("alice", "t1", T0) != session_uid("alice", "t1", T0 + timedelta(seconds=1))


# --------------------------------------------------------------------------- extractive


def test_the_extractive_summary_keeps_what_matters_and_drops_filler() -> None:
    episodes = [
        turn(0, T0, "Hi! Good morning.", "Hello! How can I help?"),
        turn(1, T0, "We decided to renovate the kitchen with Marta's builder in April."),
        turn(2, T0, "Thanks, ok.", "You're welcome."),
        turn(3, T0, "I'm worried the budget of 12,000 euros will not be enough."),
    ]
    draft = extractive_draft(episodes, ("kitchen",))
    assert draft.method == "extractive" and draft.topics == ("kitchen",)
    assert "renovate the kitchen" in draft.text and "12,000 euros" in draft.text
    assert "Good morning" not in draft.text and "welcome" not in draft.text
    assert draft.text.splitlines()[0].startswith("User: We decided")  # the order said
    assert estimate_tokens(draft.text) <= SUMMARY_TOKENS + 20


def test_a_session_of_filler_still_has_a_text() -> None:
    draft = extractive_draft([turn(0, T0, "Hi!"), turn(1, T0, "ok thanks")], ())
    assert draft.text.strip()


def test_a_long_session_stays_within_the_budget() -> None:
    episodes = [
        turn(i, T0, f"My colleague Name{i} moved to City{i} and started at Company{i} in May.")
        for i in range(60)
    ]
    draft = extractive_draft(episodes, ())
    assert 0 < len(draft.text) <= SUMMARY_TOKENS * 4
    assert "Name0" in draft.text


# --------------------------------------------------------------------------- the stage


async def say(services, texts: list[tuple[float, str]], thread: str = "t1") -> list[str]:
    """Remember turns at T0 + hours."""
    uids = []
    for hours, text in texts:
        result = await remember(
            services,
            tenant="alice",
            thread_id=thread,
            user_text=text,
            agent_text="Noted.",
            at=T0 + timedelta(hours=hours),
        )
        uids.append(result.uid)
    return uids


MOVE = [
    (0.0, "We are moving to Porto in June, my partner Joana found a flat near the river."),
    (0.1, "I'm nervous about selling the old flat in Leeds before we go."),
]
LATER = [(9.0, "I booked a pottery class for Thursday evening.")]


async def test_the_stage_summarises_the_session_a_gap_finished(agent_services, offline) -> None:
    uids = await say(agent_services, MOVE)
    out = await sessions(await loaded(uids[-1]), runtime())
    assert out["sessions"] == 0  # the session is still open
    assert await agent_services.graph.summaries.list("alice") == []
    later = await say(agent_services, LATER)
    out = await sessions(await loaded(later[0]), runtime())
    assert out["sessions"] == 1 and out["usage"].get("llm_calls", 0) == 0
    [summary] = await agent_services.graph.summaries.list("alice", "t1")
    assert summary.uid == session_uid("alice", "t1", T0)
    assert summary.episode_uids == tuple(uids) and summary.method == "extractive"
    assert "Porto" in summary.text and "Leeds" in summary.text and "pottery" not in summary.text
    assert (summary.started_at, summary.ended_at) == (T0, T0 + timedelta(hours=0.1))
    assert await agent_services.graph.summaries.of_episode("alice", uids[0]) == [summary.uid]
    [point] = await agent_services.vectors.scroll_points("summaries", "alice")
    assert point.id == point_id("alice", summary.uid)
    assert point.payload["episode_uids"] == list(uids)
    assert point.payload["started_at"] == T0.isoformat()
    # Idempotent: again writes nothing and leaves the same node and point.
    again = await sessions(await loaded(later[0]), runtime())
    assert again["sessions"] == 0
    assert await agent_services.graph.summaries.list("alice") == [summary]
    assert await agent_services.vectors.count("summaries", "alice") == 1
    assert await agent_services.graph.summaries.list("bob") == []


async def test_consolidation_finishes_the_last_session(agent_services, offline) -> None:
    uids = await say(agent_services, MOVE)
    for uid in uids:
        await agent_services.graph.episodes.set_status("alice", uid, _indexed())
    assert await summarise_sessions(agent_services, "alice", T0 + timedelta(hours=1)) == 0
    assert await summarise_sessions(agent_services, "alice", T0 + timedelta(hours=7)) == 1
    assert await summarise_sessions(agent_services, "alice", T0 + timedelta(hours=8)) == 0
    # A turn that joins the session afterwards (an import, or the pass ran early) rebuilds it
    # under the same uid.
    [extra] = await say(
        agent_services, [(0.2, "Joana decided she wants a balcony for her plants in Porto.")]
    )
    await agent_services.graph.episodes.set_status("alice", extra, _indexed())
    assert await summarise_sessions(agent_services, "alice", T0 + timedelta(hours=8)) == 1
    [summary] = await agent_services.graph.summaries.list("alice")
    assert summary.episode_uids == (*uids, extra) and "balcony" in summary.text
    assert await agent_services.vectors.count("summaries", "alice") == 1


def _indexed():
    from memory.schema import EpisodeStatus

    return EpisodeStatus.INDEXED


async def test_a_crash_between_the_point_and_the_node_is_repaired(agent_services, offline) -> None:
    uids = await say(agent_services, [*MOVE, *LATER])
    graph = agent_services.graph
    real = graph.summaries.upsert

    async def crash(summary):  # the point is written, then the process dies
        raise RuntimeError("killed")

    graph.summaries.upsert = crash  # type: ignore[method-assign]
    try:
        out = await sessions(await loaded(uids[-1]), runtime())
    finally:
        graph.summaries.upsert = real  # type: ignore[method-assign]
    assert "sessions" in " ".join(out["notes"])  # recorded, the episode carries on
    assert await agent_services.vectors.count("summaries", "alice") == 1
    assert await graph.summaries.list("alice") == []
    out = await sessions(await loaded(uids[-1]), runtime())  # the re-run (sweep, next turn)
    assert out["sessions"] == 1
    assert len(await graph.summaries.list("alice")) == 1
    assert await agent_services.vectors.count("summaries", "alice") == 1  # same point id


async def test_forgetting_a_turn_rebuilds_its_summary_without_it(agent_services, offline) -> None:
    uids = await say(agent_services, [*MOVE, *LATER])
    await sessions(await loaded(uids[-1]), runtime())
    [before] = await agent_services.graph.summaries.list("alice")
    leeds = await agent_services.graph.episodes.get("alice", uids[1])
    assert leeds is not None
    _, _, rebuilt = await forget_episode(agent_services, leeds, 0.5, T0 + timedelta(days=30))
    assert rebuilt == 1
    [after] = await agent_services.graph.summaries.list("alice")
    assert after.uid == before.uid and after.episode_uids == (uids[0],)
    assert "Leeds" not in after.text and "Porto" in after.text
    [point] = await agent_services.vectors.scroll_points("summaries", "alice")
    assert point.payload["episode_uids"] == [uids[0]] and "Leeds" not in str(point.payload["text"])
    porto = await agent_services.graph.episodes.get("alice", uids[0])
    assert porto is not None
    await forget_episode(agent_services, porto, 0.5, T0 + timedelta(days=30))
    assert await agent_services.graph.summaries.list("alice") == []  # its last turn went
    assert await agent_services.vectors.count("summaries", "alice") == 0


# --------------------------------------------------------------------------- the LLM summary


async def test_one_model_call_per_session_summary(agent_services, fake_chat) -> None:
    digest = {
        "summary": "The user and Joana are moving to Porto in June; selling the Leeds flat "
        "makes the user nervous.",
        "topics": ["Moving to Porto", "selling the flat"],
    }
    model = fake_chat(by_tool={"SessionDigest": [digest]})
    uids = await say(agent_services, [*MOVE, *LATER])
    out = await summarise_thread(agent_services, "alice", "t1", summarise=_llm(agent_services))
    assert out == 1 and model.tools_called() == ["SessionDigest"]
    [summary] = await agent_services.graph.summaries.list("alice")
    assert summary.method == "llm" and summary.text == digest["summary"]
    assert summary.topics == ("moving-to-porto", "selling-the-flat")
    assert summary.episode_uids == tuple(uids[:2])
    prompt = model.calls[0]["messages"][1].content
    assert "<session>" in prompt and "Leeds" in prompt and "pottery" not in prompt


async def test_a_summary_that_fails_validation_falls_back_to_extractive(
    agent_services, fake_chat
) -> None:
    too_long = {"summary": "word " * 220, "topics": ["x"]}  # valid schema, over the budget
    model = fake_chat(by_tool={"SessionDigest": [too_long, too_long]})
    await say(agent_services, [*MOVE, *LATER])
    assert (
        await summarise_thread(agent_services, "alice", "t1", summarise=_llm(agent_services)) == 1
    )
    assert len(model.calls) == 2  # the retry saw why
    assert "tokens; keep it under" in model.calls[1]["messages"][-1].content
    [summary] = await agent_services.graph.summaries.list("alice")
    assert summary.method == "extractive" and "Porto" in summary.text


def _llm(services):
    from memory.services.usage import Usage
    from tasks.sessions import llm_summariser

    return llm_summariser(services, Usage())


async def test_write_summary_round_trips(agent_services, offline) -> None:
    uids = await say(agent_services, MOVE)
    episodes = await agent_services.graph.episodes.get_many("alice", uids)
    draft = extractive_draft(episodes, ())
    from memory.schema import SessionSummary

    summary = SessionSummary(
        uid=session_uid("alice", "t1", T0),
        tenant="alice",
        thread_id="t1",
        text=draft.text,
        started_at=T0,
        ended_at=T0,
        episode_uids=tuple(uids),
    )
    await write_summary(agent_services, summary)
    await write_summary(agent_services, summary)
    assert await agent_services.graph.summaries.list("alice") == [summary]
    assert await agent_services.vectors.count("summaries", "alice") == 1
