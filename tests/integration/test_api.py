"""The Python API (`serve.api.Memory`) on every graph backend, real stores and embedder, offline
heuristics: add through the write path, search, get, history, facts, beliefs, delete with what
it derived, erase (checked in the stores themselves), and export -> erase -> import."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from graph.bookkeeping import run_episode
from memory.schema import VECTOR_KINDS, Episode
from memory.services import Services
from memory.services.usage import Usage
from memory.sleep.levels import Level
from memory.sleep.plan import forget_episode
from memory.sleep.reveries import vague_recall
from memory.write.episodes import remember
from memory.write.sessions import summarise_sessions
from serve.api import MAX_SEARCH_K, InvalidInput, Memory, NotFound, TooLarge
from tasks.route import assess_turn
from tests.integration.test_consolidation import sleep

T0 = datetime(2026, 1, 8, 19, 0, tzinfo=UTC)
STORY = [
    (0, "I live in Lyon, in a small flat near the old town."),
    (20, "I work at Acme Logistics as a data analyst."),
    (60, "My brother Yusuf lives in Leeds."),
    (155, "We finally moved to Porto last week!"),
    (
        170,
        "A 2021 meta-analysis in JAMA Psychiatry of 40 randomised trials (about 120,000 "
        "participants) found that regular exercise improves mood and cut the risk of depression "
        "by about 25%.",
    ),
]
USERS = ("ada", "bob", "cyd")


async def tell(mem: Memory, user: str) -> list[str]:
    """The story as one add per day, then wait for bookkeeping."""
    uids = []
    for day, text in STORY:
        done = await mem.add(
            user,
            [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
            when=T0 + timedelta(days=day),
            thread=f"day-{day}",
        )
        uids += done.uids
    await mem.flush()
    return uids


async def tell_scored(services: Services, user: str) -> list[str]:
    """The story with the router's evidence scores (as `mneme ingest` writes), so beliefs form."""
    uids = []
    for day, text in STORY:
        assessment = await assess_turn(text, [], chat=services.chat, usage=Usage())
        done = await remember(
            services,
            tenant=user,
            thread_id=f"day-{day}",
            user_text=text,
            agent_text="Noted.",
            at=T0 + timedelta(days=day),
            ess=assessment.evidence.record(),
        )
        await run_episode(services, user, done.uid)
        uids.append(done.uid)
    return uids


async def left_in_stores(services: Services, user: str) -> tuple[int, int]:
    """(graph records, vector points) of the user, read from the stores directly."""
    graph = services.graph
    if graph.backend == "sqlite":
        conn = sqlite3.connect(graph.path)  # type: ignore[attr-defined]
        try:
            tables = [
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if r[0] != "meta"
            ]
            rows = sum(
                conn.execute(f"SELECT COUNT(*) FROM {t} WHERE tenant = ?", (user,)).fetchone()[0]  # noqa: S608
                for t in tables
            )
        finally:
            conn.close()
    else:
        found = await graph._read(  # type: ignore[attr-defined]
            "MATCH (n) WHERE n.tenant = $t OR (n:Tenant AND n.id = $t) RETURN count(n) AS n", t=user
        )
        rows = found[0]["n"]
    points = sum([await services.vectors.count(kind, user) for kind in VECTOR_KINDS])
    return rows, points


async def test_add_search_get_history_and_facts(services: Services) -> None:
    mem = Memory(services)
    uids = await tell(mem, "ada")
    assert len(uids) == len(STORY)
    episode = await mem.get("ada", uids[0])
    assert episode.kind == "episode" and "I live in Lyon" in episode.text
    assert episode.status == "processed"
    facts = await mem.facts("ada")
    (porto,) = [f for f in facts if f.attribute == "home" and f.subject == "user"]
    assert porto.value == "Porto" and porto.current and porto.sources == [uids[3]]
    versions = await mem.history("ada", porto.uid)
    assert [v.value for v in versions] == ["Lyon", "Porto"]
    assert versions[0].superseded_by == porto.uid and not versions[0].current
    assert await mem.history("ada", versions[0].uid) == versions
    assert len(await mem.facts("ada", history=True)) == len(facts) + 1
    hits = await mem.search("ada", "Where do I live now?", k=5)
    assert "Porto" in hits[0].text and porto.uid in {h.uid for h in hits[:3]}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    only_turns = await mem.search("ada", "Where do I live now?", kinds=["episode"])
    assert only_turns and {h.kind for h in only_turns} == {"episode"}
    assert (await mem.get("ada", porto.uid)).kind == "fact"
    for bad in (uids[0], porto.uid, "nope"):
        with pytest.raises(NotFound):
            await mem.get("bob", bad)
    with pytest.raises(NotFound):
        await mem.history("bob", porto.uid)
    assert await mem.search("bob", "Where do I live now?") == []


PLANTS = ("tomatoes", "basil", "roses", "tulips", "carrots", "mint", "leeks", "beans", "peas")


async def test_search_returns_the_k_asked_for(services: Services) -> None:
    """`k` is honoured up to `MAX_SEARCH_K`, past the recipe's own candidate count (30)."""
    mem = Memory(services)
    told = [
        {"role": "user", "content": f"In the garden I planted {PLANTS[i % 9]} in bed {i}."}
        for i in range(45)
    ]
    await mem.add("gus", told, when=T0, thread="garden")
    await mem.flush()
    question = "What did I plant in the garden?"
    for k in (5, 10, 40):
        hits = await mem.search("gus", question, k=k, kinds=["episode"])
        assert len(hits) == k, k
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(await mem.search("gus", question)) == 10  # the default
    assert len(await mem.search("gus", question, k=MAX_SEARCH_K, kinds=["episode"])) == 45
    with pytest.raises(InvalidInput, match="k must"):
        await mem.search("gus", question, k=MAX_SEARCH_K + 1)


async def test_messages_with_ids_are_idempotent_and_bad_input_names_the_field(
    services: Services,
) -> None:
    mem = Memory(services)
    messages = [
        {"role": "user", "content": "I adopted a cat called Miso.", "id": "m1"},
        {"role": "assistant", "content": "Lovely!"},
        {"role": "user", "content": "She is two.", "id": "m2"},
    ]
    first = await mem.add("ada", messages)
    again = await mem.add("ada", messages)
    assert len(first.uids) == 2 and again.uids == first.uids and again.duplicates == first.uids
    stored = await mem.get("ada", first.uids[0])
    assert "Miso" in stored.text and "Lovely!" in stored.text
    cases = [
        ("", "content is empty"),
        ([], "non-empty"),
        ([{"role": "system", "content": "x"}], "messages[0]: role"),
        ([{"role": "user", "content": "ok"}, {"role": "user"}], "messages[1]: content"),
        ([{"role": "user", "content": "x", "extra": 1}], "messages[0]: extra"),
        ("x" * (services.settings.max_message_bytes + 1), "messages[0].content is"),
    ]
    for messages_, expected in cases:
        with pytest.raises(InvalidInput, match=expected.replace("[", r"\[").replace("]", r"\]")):
            await mem.add("ada", messages_)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="user"):
        await mem.add(" ", "hello")
    with pytest.raises(InvalidInput, match="k must"):
        await mem.search("ada", "cat", k=0)
    with pytest.raises(InvalidInput, match="query"):
        await mem.search("ada", "  ")
    assert await services.graph.episodes.count("ada") == 2


async def test_delete_removes_what_only_that_episode_supports(services: Services) -> None:
    mem = Memory(services)
    uids = await tell(mem, "ada")
    said_again = await mem.add("ada", "I work at Acme Logistics as a data analyst.", when=T0)
    await mem.flush()
    facts = {f.uid: f for f in await mem.facts("ada", history=True)}
    shared = [f for f in facts.values() if sorted(f.sources) == sorted([uids[1], *said_again.uids])]
    assert shared, "the repeated sentence is cited by both episodes"
    (porto,) = [f for f in facts.values() if f.value == "Porto"]
    await summarise_sessions(services, "ada", T0 + timedelta(days=200))
    (session,) = await services.graph.summaries.of_episode("ada", uids[3])

    report = await mem.delete("ada", uids[3])  # "we moved to Porto"
    assert report.kind == "episode" and porto.uid in report.facts_deleted
    assert report.summaries_changed == [session]  # its session had no other turn: removed
    assert session not in {s.uid for s in await services.graph.summaries.list("ada")}
    summary_points = await services.vectors.scroll_points("summaries", "ada")
    assert summary_points and all(
        uids[3] not in list(p.payload["episode_uids"])
        for p in summary_points  # type: ignore[call-overload]
    )
    with pytest.raises(NotFound):
        await mem.get("ada", uids[3])
    (lyon,) = [f for f in await mem.facts("ada") if f.attribute == "home" and f.subject == "user"]
    assert lyon.value == "Lyon" and lyon.current  # what replaced it is gone
    for kind in VECTOR_KINDS:
        points = await services.vectors.scroll_points(kind, "ada")
        assert uids[3] not in {p.payload["episode_uid"] for p in points}
        assert porto.uid not in {p.payload.get("fact_uid") for p in points}

    report = await mem.delete("ada", uids[1])
    assert {f.uid for f in shared} <= set(report.facts_kept)
    for fact in shared:
        kept = await mem.get("ada", fact.uid)
        assert kept.sources == said_again.uids
    knowledge = await services.vectors.scroll_points("knowledge", "ada")
    by_fact = {p.payload["fact_uid"]: p.payload["episode_uid"] for p in knowledge}
    assert all(by_fact[f.uid] == said_again.uids[0] for f in shared)  # re-pointed
    hits = await mem.search("ada", "Acme Logistics data analyst")
    assert uids[1] not in {h.uid for h in hits} and hits

    fact_report = await mem.delete("ada", lyon.uid)
    assert fact_report.kind == "fact"
    with pytest.raises(NotFound):
        await mem.delete("ada", lyon.uid)
    with pytest.raises(NotFound):
        await mem.delete("bob", uids[0])  # another user's uid


async def test_erase_leaves_nothing_of_that_user_in_either_store(services: Services) -> None:
    mem = Memory(services)
    for user in USERS:
        await tell_scored(services, user)
        # Each day's session is over: the sleep gives each its summary too.
        await sleep(services, user, Level.DAILY, T0 + timedelta(days=200))
        assert await services.vectors.count("summaries", user) == len(STORY)
    assert len(await mem.diary("ada")) == len(STORY), "daily sleep wrote the diary rows"
    assert len((await mem.export("ada")).summaries) == len(STORY)
    before = {u: await left_in_stores(services, u) for u in USERS}
    assert all(rows > 0 and points > 0 for rows, points in before.values())
    assert await mem.beliefs("ada"), "the story's argument forms a belief"
    report = await mem.erase("ada")
    assert report.graph_records > 0 and report.vector_points == before["ada"][1]
    assert await left_in_stores(services, "ada") == (0, 0)
    for user in ("bob", "cyd"):
        assert await left_in_stores(services, user) == before[user]
    again = await mem.erase("ada")
    assert (again.graph_records, again.vector_points) == (0, 0)
    # Killed after the graph half: running it again finishes the vectors.
    await services.graph.erase_tenant("bob")
    assert (await left_in_stores(services, "bob"))[1] > 0
    await mem.erase("bob")
    assert await left_in_stores(services, "bob") == (0, 0)
    assert await left_in_stores(services, "cyd") == before["cyd"]


async def test_export_erase_import_gives_the_same_memory(services: Services) -> None:
    mem = Memory(services)
    uids = await tell_scored(services, "ada")
    for day, text in [
        (200, "My blood type is O negative."),
        (201, "Yusuf said that I never listen."),
    ]:
        uids += (await mem.add("ada", text, when=T0 + timedelta(days=day), thread="more")).uids
    await mem.flush()
    await tell_scored(services, "bob")
    questions = ["Where do I live?", "What is my job?", "does exercise help mood?", "brother"]

    async def state(user: str) -> tuple[object, ...]:
        episodes = await services.graph.episodes.get_many(user, uids)
        sources = sorted((e.uid, e.source.value) for e in episodes)
        facts = [f.model_dump() for f in await mem.facts(user, history=True)]
        beliefs = [
            (b.topic, b.statement, round(b.valence, 9), round(b.confidence, 9), b.evidence_count)
            for b in await mem.beliefs(user)
        ]
        searches = [[(h.uid, h.score) for h in await mem.search(user, q)] for q in questions]
        return sources, facts, beliefs, searches

    before = await state("ada")
    assert before[1] and before[2] and all(before[3])
    exported = await mem.export("ada")
    assert [e.uid for e in exported.episodes] == uids
    # where each turn came from and how precisely each fact sits in time travel with them
    assert [e.source.value for e in exported.episodes][-2:] == ["stated", "third_party"]
    precisions = {f.text: f.precision for f in exported.facts}
    assert precisions["The user's blood type is O negative."] == "unbounded"
    assert not any("listen" in f.text for f in exported.facts)  # Yusuf's claim: not the user's fact
    assert exported.facts and exported.beliefs
    document = exported.model_dump(mode="json")  # what a caller would store

    await mem.erase("ada")
    assert await left_in_stores(services, "ada") == (0, 0)
    imported = await mem.import_("ada", document)
    assert imported.uids == uids and not imported.duplicates
    assert await state("ada") == before
    again = await mem.import_("ada", document)
    assert again.duplicates == uids  # idempotent
    assert await state("ada") == before

    with pytest.raises(InvalidInput, match="export"):
        await mem.import_("ada", {"format": "something-else"})


TRIP = [
    "We are planning a trip to Kyoto in April.",
    "My sister Lina is coming along with her husband.",
    "Lina wants to see the bamboo forest at Arashiyama.",
    "I booked a ryokan near Gion for four nights.",
    "We saw a documentary about penguins in Antarctica yesterday.",
    "The flights go through Helsinki both ways.",
    "I should buy a rail pass before we leave.",
    "Lina's husband Marco is vegetarian, so we need good restaurants.",
]


async def tell_trip(services: Services) -> list[Episode]:
    """The trip told by ada in one thread, five minutes apart; its episodes in time order."""
    mem = Memory(services)
    for i, text in enumerate(TRIP):
        await mem.add(
            "ada",
            [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
            when=T0 + timedelta(minutes=5 * i),
            thread="trip",
        )
    await mem.flush()
    uids = await services.graph.episodes.list_uids("ada")
    return sorted(await services.graph.episodes.get_many("ada", uids), key=lambda e: e.created_at)


async def test_export_holds_thread_layers_and_reveries_and_import_writes_them_back(
    services: Services,
) -> None:
    """What erase removes, the export holds: the thread's compressed layers and the reverie a
    forgotten turn left come back with import, as the user's or as another user's."""
    mem = Memory(services)
    episodes = await tell_trip(services)
    penguins = episodes[4]
    assert "penguins" in penguins.user_text
    assert (await forget_episode(services, penguins, 0.05, T0 + timedelta(days=400)))[1]
    exported = await mem.export("ada")
    assert [t.thread_id for t in exported.threads] == ["trip"]
    assert exported.threads[0].exchanges or exported.threads[0].summary, "turns left the window"
    assert [r.episode_uid for r in exported.reveries] == [penguins.uid]
    assert "penguins" in exported.reveries[0].impression
    document = exported.model_dump(mode="json")

    await mem.erase("ada")
    assert (await mem.export("ada")).threads == [] and (await mem.export("ada")).reveries == []
    await mem.import_("ada", document)
    again = await mem.export("ada")
    assert again.threads == exported.threads
    assert again.reveries == exported.reveries
    recalled = await vague_recall(services, "ada", "Have we seen anything about penguins?")
    assert [r["text"] for r in recalled][:1] == [exported.reveries[0].impression]

    await mem.import_("bob", document)  # another user: the uids are the user's own
    bob = await mem.export("bob")
    assert len(bob.threads) == 1 and len(bob.reveries) == 1
    assert bob.reveries[0].episode_uid != penguins.uid
    assert bob.threads[0].summary == exported.threads[0].summary
    bob_uids = set(await services.graph.episodes.list_uids("bob"))
    assert {x.uid for x in bob.threads[0].exchanges} <= bob_uids
    assert set(bob.reveries[0].neighbours) <= bob_uids

    huge = {**document, "reveries": [{**document["reveries"][0], "impression": "x" * 2_000_000}]}
    with pytest.raises(TooLarge, match=r"reveries\[0\]\.impression"):
        await mem.import_("cyd", huge)
    assert await services.graph.episodes.list_uids("cyd") == []  # checked before any write
