"""The retrieval pipeline over real stores: contextual derivatives, time windows, the associative
path, temporal neighbours, the local-mode snapshot, ablations and the `now` cutoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.bookkeeping import run_episode
from memory.embeddings.embedders import Embedder
from memory.retrieval.boosts import content_words
from memory.retrieval.recipes import PARTS, SIMPLE, TEMPORAL, Recipe, ablate, changed
from memory.retrieval.retrieve import retrieve
from memory.services import Services
from memory.write.episodes import remember
from tests.conftest import make_settings

pytestmark = pytest.mark.slow

T0 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)
LATER = datetime(2023, 9, 1, tzinfo=UTC)

TURNS = [
    (T0, "Ana: Did you finally adopt the kitten from the shelter?"),
    (T0 + timedelta(seconds=30), "Ben: Yes! Last Saturday. She is grey and tiny."),
    (T0 + timedelta(seconds=60), "Ana: I have been training for the Lisbon half marathon."),
    (T0 + timedelta(seconds=90), "Ben: My sister Carla lives in Porto, she runs too."),
    (T0 + timedelta(days=40), "Ana: I went hiking in the Alps with my cousin."),
    (T0 + timedelta(seconds=120), "Ben: I went hiking near the lake with my dog."),
]


QUERIES = [
    "Did Ben adopt the kitten?",
    "hiking with the dog",
    "Where does Carla live?",
    "What did Ana do in May?",
]


async def _load(services: Services, tenant: str = "t") -> list[str]:
    uids = []
    for at, text in TURNS:
        done = await remember(
            services, tenant=tenant, thread_id=f"s-{at.date()}", user_text=text, at=at
        )
        await run_episode(services, tenant, done.uid)
        uids.append(done.uid)
    return uids


async def test_a_reply_is_found_through_its_context(services: Services) -> None:
    uids = await _load(services)
    found = await retrieve(services, "t", "Did Ben adopt a kitten?", SIMPLE, LATER)
    top = [c.episode_uid for c in found[:2]]
    assert uids[1] in top and uids[0] in top
    reply = next(c for c in found if c.episode_uid == uids[1])
    # the fragment shown is the exact turn, never the context derivative
    assert reply.fragments[0].startswith("Ben: Yes! Last Saturday.")
    assert any("Ben is grey" in q or "Last Saturday (" in q for q in reply.questions)


async def test_time_window_boost_prefers_the_named_month(services: Services) -> None:
    uids = await _load(services)
    # The June hike is the only turn of its thread, so no neighbour lends it relevance: the
    # recipe leaves smoothing out to see the time boost alone.
    recipe = ablate(SIMPLE, "smoothing")
    june = await retrieve(services, "t", "Who went hiking in June 2023?", recipe, LATER)
    assert june[0].episode_uid == uids[4]
    assert june[0].in_window
    off = await retrieve(
        services, "t", "Who went hiking in June 2023?", ablate(recipe, "time"), LATER
    )
    on_rel = {c.episode_uid: c.relevance for c in june if c.kind == "episode"}
    off_rel = {c.episode_uid: c.relevance for c in off if c.kind == "episode"}
    # the window still shows (it is provenance), but only the recipe with time boosts it
    assert on_rel[uids[4]] / on_rel[uids[5]] > off_rel[uids[4]] / off_rel[uids[5]]
    # by a factor, not a constant: a turn is not lifted by its date alone
    lift = (on_rel[uids[4]] / on_rel[uids[5]]) / (off_rel[uids[4]] / off_rel[uids[5]])
    assert lift == pytest.approx(1.0 + recipe.time.boost)


async def test_entities_in_the_query_bring_their_episodes(services: Services) -> None:
    uids = await _load(services)
    found = await retrieve(services, "t", "Where does Carla live?", SIMPLE, LATER)
    assert found[0].episode_uid == uids[3]
    assert found[0].proximity > 0


async def test_a_named_speaker_favours_their_own_turns(services: Services) -> None:
    uids = await _load(services)
    query = "Where did Ben go hiking?"
    on = await retrieve(services, "t", query, SIMPLE, LATER)
    off = await retrieve(services, "t", query, ablate(SIMPLE, "speaker"), LATER)
    assert on[0].episode_uid == uids[5]  # Ben's own hike, not Ana's
    on_score = {c.episode_uid: c.score for c in on if c.kind == "episode"}
    off_score = {c.episode_uid: c.score for c in off if c.kind == "episode"}
    # the boost scales relevance, so it widens the gap rather than reordering by name alone
    assert on_score[uids[5]] / on_score[uids[4]] > off_score[uids[5]] / off_score[uids[4]]
    assert on_score[uids[4]] == pytest.approx(off_score[uids[4]])


async def test_temporal_recipe_adds_neighbours(services: Services) -> None:
    uids = await _load(services)
    recipe = changed(TEMPORAL, {"search.max_candidates": 1})
    found = await retrieve(services, "t", "Lisbon half marathon training", recipe, LATER)
    assert found[0].episode_uid == uids[2]
    neighbours = {c.episode_uid: c for c in found if c.source == "neighbour"}
    assert {uids[0], uids[1], uids[3]} <= set(neighbours)
    assert all(c.neighbour_of == uids[2] for c in neighbours.values())


async def test_now_is_a_cutoff_and_tenants_are_apart(services: Services) -> None:
    uids = await _load(services)
    early = await retrieve(services, "t", "hiking", SIMPLE, T0 + timedelta(days=1))
    assert uids[4] not in {c.episode_uid for c in early}
    assert await retrieve(services, "someone-else", "hiking", SIMPLE, LATER) == []


async def test_every_part_can_be_turned_off(tmp_path: Path, embedder: Embedder) -> None:
    # The switches are retrieval logic, not storage: one backend (the embedded one) covers them.
    services = await Services.open(make_settings(tmp_path), embedder=embedder)
    try:
        uids = await _load(services)
        for part in sorted(PARTS):
            recipe = ablate(SIMPLE, part)
            found = await retrieve(services, "t", "Did Ben adopt the kitten?", recipe, LATER)
            assert found and uids[1] in {c.episode_uid for c in found[:3]}, part
    finally:
        await services.close()


async def test_the_embedded_default_and_qdrant_client_rank_alike(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The same memory on Qdrant Edge (the embedded default) and on qdrant-client (the engine a
    server runs; here its local mode) gives the same rankings: ranking lives above the index."""
    rankings = []
    for location in (tmp_path / "edge", Path(":memory:")):
        settings = make_settings(tmp_path / location.name, qdrant_path=location)
        services = await Services.open(settings, embedder=embedder)
        try:
            assert services.vectors.backend == (
                "qdrant" if location.name == ":memory:" else "qdrant-edge"
            )
            await _load(services)
            rankings.append(
                [
                    [(c.content, round(c.score, 4)) for c in found]
                    for q in QUERIES
                    for found in [await retrieve(services, "t", q, TEMPORAL, LATER)]
                ]
            )
        finally:
            await services.close()
    # Episode uids are random, and ties are ordered by uid: compare each text's score (the two
    # engines' float sums may differ in the last digit, so not to the 4th decimal).
    edge, client = ([dict(r) for r in run] for run in rankings)
    for mine, theirs in zip(edge, client, strict=True):
        assert mine.keys() == theirs.keys()
        assert mine == {text: pytest.approx(score, abs=1e-3) for text, score in theirs.items()}


async def test_a_bare_question_never_outranks_the_statement_that_answers_it(
    services: Services,
) -> None:
    """The question is kept (it happened) but is no answer, though its words match exactly."""
    said = await remember(
        services,
        tenant="q",
        thread_id="s1",
        user_text="I work as a nurse at the children's hospital in Leeds.",
        agent_text="That must be rewarding.",
        at=T0,
    )
    asked = []
    for n, agent in enumerate(["", "On 8 May you told me that you work as a nurse."]):
        done = await remember(
            services,
            tenant="q",
            thread_id=f"q{n}",
            user_text="Where do I work?",
            agent_text=agent,
            at=T0 + timedelta(days=n + 1),
        )
        asked.append(done.uid)
    for uid in [said.uid, *asked]:
        await run_episode(services, "q", uid)
    found = [
        c.episode_uid for c in await retrieve(services, "q", "Where do I work?", SIMPLE, LATER)
    ]
    assert found[0] == said.uid
    assert set(asked) <= set(found)  # still found, below the answer


async def tell(services: Services, tenant: str, texts: list[str]) -> list[str]:
    """Each text a one-sided turn of one thread, a second apart, through bookkeeping; the uids."""
    uids = []
    for n, text in enumerate(texts):
        done = await remember(
            services, tenant=tenant, thread_id="s1", user_text=text, at=T0 + timedelta(seconds=n)
        )
        await run_episode(services, tenant, done.uid)
        uids.append(done.uid)
    return uids


async def test_a_turn_that_asks_weighs_less_than_one_that_tells(services: Services) -> None:
    """Between people, a question's words match a later question as well as the answer's do;
    the sentences that ask state nothing (`Turns.question_discount`)."""
    asked, told, _ = await tell(
        services,
        "a",
        [
            "Ana: Wow, a pottery class! What did you make in the pottery class?",
            "Ben: I made a blue bowl in the pottery class on Saturday.",
            "Ana: I painted the lake near my house this weekend.",
        ],
    )
    question = "What did Ben make in the pottery class?"
    found = await retrieve(services, "a", question, SIMPLE, LATER)
    flat = await retrieve(services, "a", question, ablate(SIMPLE, "questions"), LATER)
    score = {c.episode_uid: c.score for c in found}
    before = {c.episode_uid: c.score for c in flat}
    assert score[asked] == pytest.approx(before[asked] * (1 - SIMPLE.turns.question_discount / 2))
    assert score[told] == pytest.approx(before[told])  # it asks nothing
    assert found[0].episode_uid == told


LONG_WORDS = (
    "apples bridges candles dancers engines forests gardens harbours islands jackets kettles "
    "ladders meadows needles orchards pencils quilts rivers saddles tunnels umbrellas valleys "
    "wagons yachts zebras anchors baskets castles daisies eagles feathers glaciers hammers "
    "igloos jungles kites lanterns mirrors nests oceans parrots quarries ribbons statues "
    "towers violins windmills yarns"
).split()
"""48 distinct content words."""


async def test_a_turn_that_says_little_weighs_less_than_one_that_says_much(
    services: Services,
) -> None:
    """At the same match, the turn with more to say is likelier to hold the answer
    (`Turns.brevity_discount`); from `brevity_words` content words on, a turn pays nothing,
    and a turn with both sides pays nothing."""
    uids = await tell(
        services,
        "b",
        [
            "Ana: Pottery, yes!",
            "Ben: Pottery on Saturdays is my thing now: I throw bowls and mugs at the studio "
            "near the river, glaze them in blue, and my kids paint the small ones.",
            "Cy: Pottery taught me patience. " + " ".join(f"{w}." for w in LONG_WORDS),
        ],
    )
    short, long, longest = uids
    chat = await remember(  # both sides: the reply's length says nothing of what was told
        services,
        tenant="b",
        thread_id="chat",
        user_text="Pottery, yes!",
        agent_text="Great.",
        at=LATER - timedelta(hours=1),
    )
    await run_episode(services, "b", chat.uid)
    question = "pottery"
    found = await retrieve(services, "b", question, SIMPLE, LATER)
    flat = await retrieve(services, "b", question, ablate(SIMPLE, "brevity"), LATER)
    score = {c.episode_uid: c.score for c in found}
    before = {c.episode_uid: c.score for c in flat}
    words = {e.uid: content_words(e) for e in await services.graph.episodes.get_many("b", uids)}
    assert words[short] == 2  # "pottery", "ye": the label is no word of the turn
    assert score[short] == pytest.approx(
        before[short] * (1 - SIMPLE.turns.brevity_discount * (1 - 2 / SIMPLE.turns.brevity_words))
    )
    assert words[long] < SIMPLE.turns.brevity_words
    assert score[long] == pytest.approx(
        before[long]
        * (1 - SIMPLE.turns.brevity_discount * (1 - words[long] / SIMPLE.turns.brevity_words))
    )
    assert score[short] / before[short] < score[long] / before[long]
    assert words[longest] >= SIMPLE.turns.brevity_words
    assert score[longest] == pytest.approx(before[longest])
    assert score[chat.uid] == pytest.approx(before[chat.uid])


async def test_smoothing_follows_the_shape_of_a_turn(services: Services) -> None:
    # Two user + assistant episodes in one chat, two one-speaker turns in one talk: each kind's
    # neighbours lend it relevance at its own weight (`paired_smoothing` / `smoothing`).
    chat = [
        ("Which tomatoes suit a balcony?", "Cherry tomatoes suit a balcony, in deep pots."),
        ("And basil on the balcony?", "Basil grows well beside balcony tomatoes."),
    ]
    uids = {}
    for i, (user, agent) in enumerate(chat):
        done = await remember(
            services,
            tenant="t",
            thread_id="chat",
            user_text=user,
            agent_text=agent,
            at=T0 + timedelta(seconds=i),
        )
        await run_episode(services, "t", done.uid)
        uids[f"p{i}"] = done.uid
    for i, text in enumerate(["Ana: My balcony tomatoes are ripe.", "Ben: Balcony tomatoes?"]):
        done = await remember(
            services,
            tenant="t",
            thread_id="talk",
            user_text=text,
            at=T0 + timedelta(hours=1, seconds=i),
        )
        await run_episode(services, "t", done.uid)
        uids[f"o{i}"] = done.uid

    async def relevance(smoothing: float, paired: float) -> dict[str, float]:
        recipe = changed(SIMPLE, {"graph.smoothing": smoothing, "graph.paired_smoothing": paired})
        found = await retrieve(services, "t", "balcony tomatoes", recipe, LATER)
        by_uid = {c.episode_uid: c.relevance for c in found if c.kind == "episode"}
        return {name: by_uid[uid] for name, uid in uids.items()}

    none = await relevance(0.0, 0.0)
    one_sided = await relevance(0.5, 0.0)
    paired = await relevance(0.0, 0.5)
    # (relevance is scaled by the best, so the test compares ratios within a run)
    assert one_sided["p0"] / one_sided["p1"] == pytest.approx(none["p0"] / none["p1"])
    assert one_sided["o0"] / one_sided["p0"] > none["o0"] / none["p0"]
    assert paired["o0"] / paired["o1"] == pytest.approx(none["o0"] / none["o1"])
    assert paired["p0"] / paired["o0"] > none["p0"] / none["o0"]


async def test_a_turn_found_through_its_reply_alone_ranks_both_sides_as_context(
    services: Services,
) -> None:
    # Only the reply speaks of brisket: the user's side matched nothing the question asks.
    only_reply = await remember(
        services,
        tenant="r",
        thread_id="s1",
        user_text="My cousin Julia visits on Tuesday, by the way.",
        agent_text="Lovely! For the brisket, keep the smoker at 110 C for about twelve hours.",
        at=T0,
    )
    both = await remember(
        services,
        tenant="r",
        thread_id="s2",
        user_text="I smoked my first brisket last weekend in the new smoker.",
        agent_text="A first brisket is a milestone; how did the bark turn out?",
        at=T0 + timedelta(days=1),
    )
    for uid in (only_reply.uid, both.uid):
        await run_episode(services, "r", uid)
    question = "How long do I smoke a brisket, and how hot?"

    async def sides(recipe: Recipe) -> dict[str, tuple[float, dict[str, float]]]:
        found = await retrieve(services, "r", question, recipe, LATER)
        return {c.episode_uid: (c.score, c.sides) for c in found if c.kind == "episode"}

    on, off = await sides(SIMPLE), await sides(ablate(SIMPLE, "reply"))
    score, side = on[only_reply.uid]
    assert side == {
        "user": pytest.approx(score * SIMPLE.turns.reply_weight),
        "agent": pytest.approx(score * SIMPLE.turns.reply_weight),
    }
    assert off[only_reply.uid][1]["user"] == pytest.approx(off[only_reply.uid][0])
    score, side = on[both.uid]  # the user's words matched: the user's side answers
    assert side["user"] == pytest.approx(score)
    assert side["agent"] == pytest.approx(score * SIMPLE.turns.reply_weight)
