"""The steps of a retrieval pass, each alone: the requests sent to the vector index, the hits
accumulated into episodes, the fusion of one pass, the boosts, the passes combined and the
final assembly of a candidate. No store: hits and episodes are built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.retrieval.accumulate import Found, accumulate, merged
from memory.retrieval.assemble import Ranked, candidate, episode_candidates, rerank_depth, shown
from memory.retrieval.associative import Association
from memory.retrieval.boosts import (
    content_words,
    created_of,
    credibility_bonus,
    episode_score,
    shape_factors,
    sides,
    smoothed,
    with_proximity,
    within_window,
)
from memory.retrieval.passes import Pass, combined, fused
from memory.retrieval.question import Question
from memory.retrieval.recipes import SIMPLE, ablate, changed
from memory.retrieval.requests import (
    HIT_FIELDS,
    WINDOW_FIELDS,
    Probe,
    pass_requests,
    point_limit,
    ranked_session_turns,
    session_requests,
)
from memory.schema import Episode, episode_content
from memory.stores.base import SparseVector, VectorHit
from memory.stores.graph.episodes import ThreadLinks
from memory.text.questions import BARE_QUESTION_FACTOR
from memory.text.sparse import tokenize
from memory.text.timeparse import TimeWindow, parse_time

NOW = datetime(2024, 6, 30, tzinfo=UTC)
JUNE = TimeWindow(datetime(2024, 6, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC), "June")
DENSE = [0.1, 0.2, 0.3]
SPARSE = SparseVector((1, 2), (0.5, 0.5))


def hit(uid: str, score: float, text: str, role: str = "user", **payload: object) -> VectorHit:
    """A derivative hit of episode `uid`."""
    return VectorHit(
        id=f"{uid}:{text}",
        score=score,
        payload={"episode_uid": uid, "role": role, "text": text, **payload},
    )


def episode(uid: str, user: str, agent: str = "", **fields: object) -> Episode:
    content = episode_content(user, agent)
    values: dict[str, object] = {
        "uid": uid,
        "tenant": "t",
        "thread_id": "s1",
        "content": content,
        "user_text": user,
        "agent_text": agent,
        "created_at": NOW - timedelta(days=3),
    }
    return Episode.model_validate(values | fields)


# ---------------------------------------------------------------- requests


def test_a_pass_sends_dense_and_sparse_per_collection_then_facts_then_summaries() -> None:
    probe = Probe("Where does Carla live?", DENSE, SPARSE)
    sent = pass_requests(SIMPLE, probe)
    assert [(s.mode, s.kind) for s in sent] == [
        ("dense", "derivatives"),
        ("sparse", "derivatives"),
        ("dense", "prospective"),
        ("sparse", "prospective"),
        ("dense", "knowledge"),
        ("sparse", "knowledge"),
        ("hybrid", "summaries"),
    ]
    limit = point_limit(SIMPLE)
    assert limit == 30 * 2 * 2  # max_candidates x overfetch x fragments_per_episode
    by = {(s.mode, s.kind): s.request for s in sent}
    assert by["dense", "derivatives"].limit == limit
    assert by["dense", "prospective"].limit == limit // 2  # prospective_share
    assert by["dense", "derivatives"].score_threshold == SIMPLE.search.similarity_floor
    assert by["sparse", "derivatives"].score_threshold is None
    assert by["dense", "knowledge"].score_threshold == SIMPLE.facts.similarity_floor
    assert by["dense", "knowledge"].limit == 2 * SIMPLE.facts.limit
    assert by["hybrid", "summaries"].limit == SIMPLE.summaries.hits
    assert all(s.request.fields == HIT_FIELDS for s in sent if s.kind in ("derivatives",))


def test_what_a_recipe_turns_off_is_not_sent() -> None:
    probe = Probe("Where does Carla live?", DENSE, SPARSE)
    # a recipe without sparse search probes without a sparse vector (`passes._probe`)
    dense_only = Probe(probe.text, DENSE, None)
    modes = {s.mode for s in pass_requests(ablate(SIMPLE, "sparse"), dense_only)}
    assert modes == {"dense", "hybrid"}  # the summaries' search keeps the dense vector
    kinds = {s.kind for s in pass_requests(ablate(SIMPLE, "prospective"), probe)}
    assert kinds == {"derivatives", "knowledge", "summaries"}
    off = {s.kind for s in pass_requests(ablate(ablate(SIMPLE, "facts"), "summaries"), probe)}
    assert off == {"derivatives", "prospective"}
    # without vectors only the facts' own lexical search runs (it reads `fact_terms`)
    bare = [(s.mode, s.kind) for s in pass_requests(SIMPLE, Probe("Carla", None, None))]
    assert bare == [("sparse", "knowledge")]
    assert pass_requests(ablate(SIMPLE, "sparse"), Probe("Carla", None, None)) == []


def test_a_named_window_boosts_without_filtering_and_fetches_the_date() -> None:
    probe = Probe("What did Ana do in June?", DENSE, SPARSE, window=JUNE)
    plain = pass_requests(SIMPLE, probe)
    assert all(s.request.filter is None for s in plain)
    assert plain[0].request.fields == WINDOW_FIELDS  # the time boost reads created_at
    no_boost = pass_requests(ablate(SIMPLE, "time"), probe)
    assert no_boost[0].request.fields == HIT_FIELDS


def test_a_matched_session_searches_its_own_turns() -> None:
    probe = Probe("q", DENSE, SPARSE, window=JUNE)
    asked = session_requests(SIMPLE, probe, [["e1", "e2"]])
    (request,) = asked
    assert request.kind == "derivatives" and request.dense == DENSE and request.sparse == SPARSE
    assert request.filter is not None and list(request.filter.episode_uids or []) == ["e1", "e2"]
    assert request.filter.created_from is None  # a window boosts, it never filters
    assert request.limit == 6  # summaries.turns x fragments_per_episode


def test_session_turns_score_by_the_summary_and_their_rank_in_the_session() -> None:
    first = [hit("a", 0.9, "a1"), hit("a", 0.8, "a2"), hit("b", 0.7, "b1"), hit("c", 0.1, "c1")]
    second = [hit("b", 0.9, "b1"), hit("d", 0.5, "d1")]
    out = ranked_session_turns([0.8, 0.4], [first, second], per_session=2)
    scores = {str(h.payload["episode_uid"]): h.score for h in out}
    # a turn is its best fragment; the first session's best turn scores 1, its second 1/2;
    # b is second in session 1 (1/2) and first in session 2 (0.5): it keeps its best
    assert scores == {"a": 1.0, "b": 0.5, "d": pytest.approx(0.25)}
    assert [h.payload["episode_uid"] for h in out] == ["a", "b", "d"]


# ---------------------------------------------------------------- accumulate


def test_an_episode_scores_its_best_point_per_list_and_keeps_what_matched() -> None:
    searches = [
        ("dense", "derivatives", [hit("a", 0.6, "chunk one"), hit("a", 0.4, "chunk two")]),
        ("sparse", "derivatives", [hit("a", 3.0, "chunk two"), hit("b", 6.0, "Ben said")]),
        (
            "dense",
            "prospective",
            [hit("b", 0.5, "Did Ben adopt a kitten?", derivative_text="Ben said")],
        ),
        ("dense", "derivatives", [hit("c", 0.7, "c and the turns before", role="context")]),
        ("dense", "knowledge", [VectorHit("k", 0.8, {"fact_uid": "f1"})]),
    ]
    acc = accumulate(SIMPLE, searches, pointers=["z"])
    a, b, c = acc.episodes["a"], acc.episodes["b"], acc.episodes["c"]
    assert acc.lists["dense"].scores == {"a": 0.6, "b": 0.5, "c": 0.7}
    assert acc.lists["sparse"].scores == {"a": 3.0, "b": 6.0}
    assert (a.dense, a.sparse) == (0.6, 3.0)
    # each fragment at its best raw score in any list, in the order first seen
    assert a.fragments == {"chunk one": 0.6, "chunk two": 3.0}
    assert b.questions == {"Did Ben adopt a kitten?": 0.5}
    assert b.fragments == {"Ben said": 6.0}  # the question's turn, not the question
    assert c.fragments == {} and c.roles == {"context"}  # context is scored, never shown
    assert acc.episodes["z"].payload == {}  # the associative path's, nothing matched
    assert acc.facts.dense == {"f1": 0.8}
    assert acc.facts.sparse_scale == 6.0
    assert [text for _, text in acc.lexical] == ["chunk two", "Ben said"]


def test_exact_chunks_only_leave_context_derivatives_out() -> None:
    searches = [("dense", "derivatives", [hit("c", 0.7, "ctx", role="context")])]
    assert accumulate(ablate(SIMPLE, "contextual"), searches).episodes == {}


def test_summary_turns_join_their_own_list() -> None:
    turns = [hit("a", 1.0, "a said"), hit("b", 0.5, "b and before", role="context")]
    acc = accumulate(SIMPLE, [("hybrid", "summaries", turns)])
    assert acc.lists["summaries"].scores == {"a": 1.0, "b": 0.5}
    assert acc.lists["summaries"].weight == SIMPLE.summaries.weight
    assert acc.episodes["a"].fragments == {"a said": 0.0} and acc.episodes["b"].fragments == {}


def test_passes_merge_at_each_episodes_best() -> None:
    one = accumulate(SIMPLE, [("dense", "derivatives", [hit("a", 0.3, "x", role="agent")])])
    two = accumulate(SIMPLE, [("dense", "derivatives", [hit("a", 0.5, "y"), hit("b", 0.2, "z")])])
    both = merged([one.episodes, two.episodes], ["a"])
    assert set(both) == {"a"}
    assert both["a"].dense == 0.5 and both["a"].roles == {"agent", "user"}
    assert both["a"].fragments == {"x": 0.3, "y": 0.5}
    assert merged([one.episodes], ["a"]) is one.episodes


# ---------------------------------------------------------------- fuse


def test_the_dense_weight_grows_when_no_lexical_hit_holds_the_question() -> None:
    query = "Where does Carla live?"
    held = [("sparse", "derivatives", [hit("a", 2.0, "Carla does live in Porto")])]
    stray = [("sparse", "derivatives", [hit("a", 2.0, "I live here")])]
    for searches, gain in ((held, 1.0), (stray, None)):
        acc = accumulate(SIMPLE, [("dense", "derivatives", [hit("a", 0.5, "x")]), *searches])
        fused(acc, query, SIMPLE)
        assert acc.facts.dense_weight == acc.lists["dense"].weight
        if gain is not None:
            assert acc.lists["dense"].weight == gain
        else:
            assert acc.lists["dense"].weight > 1.0
    fixed = accumulate(ablate(SIMPLE, "adaptive"), stray)
    fused(fixed, query, ablate(SIMPLE, "adaptive"))
    assert fixed.lists["dense"].weight == 1.0


def test_a_pass_fuses_only_the_lists_its_recipe_searches() -> None:
    searches = [
        ("dense", "derivatives", [hit("a", 0.8, "x"), hit("b", 0.3, "y")]),
        ("sparse", "derivatives", [hit("b", 4.0, "y"), hit("c", 1.0, "z")]),
    ]
    recipe = ablate(SIMPLE, "adaptive")
    both = fused(accumulate(recipe, searches), "x y", recipe)
    # a missing item scores its list's lowest: a's sparse 1/4, c's dense 0.3
    assert both == {
        "a": pytest.approx(0.8 + 0.25),
        "b": pytest.approx(0.3 + 1.0),
        "c": pytest.approx(0.3 + 0.25),
    }
    recipe = ablate(recipe, "sparse")
    dense_only = fused(accumulate(recipe, searches), "x y", recipe)
    assert dense_only == {"a": 0.8, "b": 0.3, "c": 0.3}


def test_smoothing_lends_by_the_shape_of_the_turn() -> None:
    relevance = {"q": 1.0, "a": 0.2, "p": 0.2}
    links = ThreadLinks(adjacent={"a": ("q", None), "p": ("q", None)}, paired={"p"})
    out = smoothed(relevance, links, SIMPLE.graph)
    assert out["a"] == pytest.approx(0.2 + SIMPLE.graph.smoothing)
    assert out["p"] == pytest.approx(0.2 + SIMPLE.graph.paired_smoothing)
    assert out["q"] == 1.0


def test_proximity_adds_and_a_window_multiplies() -> None:
    relevance = {"in": 0.5, "out": 0.5, "none": 0.0}
    with_proximity(relevance, {"in": 0.4}, 0.25)
    assert relevance == {"in": pytest.approx(0.6), "out": 0.5, "none": 0.0}
    payloads = {
        "in": {"created_at": "2024-06-10T12:00:00+00:00"},
        "out": {"created_at": datetime(2024, 5, 10, tzinfo=UTC)},
        "none": {"created_at": datetime(2024, 6, 10, tzinfo=UTC)},
    }
    within_window(relevance, payloads, JUNE, 0.15)
    assert relevance["in"] == pytest.approx(0.6 * 1.15)
    assert relevance["out"] == 0.5
    assert relevance["none"] == 0.0  # not lifted by its date alone
    same = dict(relevance)
    within_window(relevance, payloads, None, 0.15)
    within_window(relevance, payloads, JUNE, 0.0)
    assert relevance == same


def test_created_of_reads_datetimes_and_iso_strings() -> None:
    assert created_of({"created_at": "2024-06-10T12:00:00+00:00"}) == datetime(
        2024, 6, 10, 12, tzinfo=UTC
    )
    assert created_of({"created_at": "not a date"}) is None
    assert created_of({}) is None


def question(text: str, *, entities: tuple[str, ...] = (), weights=None) -> Question:
    return Question.read([text], NOW, [parse_time(text, NOW)], entities, SIMPLE, weights)


def test_an_episode_score_adds_speaker_coverage_priors_and_credibility() -> None:
    ana = episode("e", "Ana: I read a novel about whales")
    asked = question("What did Ana read?", entities=("Ana",))
    plain = episode_score(ana, 0.5, question("What did she read?"), ablate(SIMPLE, "rerank"))
    assert plain == 0.5
    lifted = episode_score(ana, 0.5, asked, ablate(SIMPLE, "rerank"))
    assert lifted == pytest.approx(0.5 * (1 + SIMPLE.turns.speaker_boost))
    covered = episode_score(ana, 0.5, asked, ablate(SIMPLE, "speaker"))
    share = 1 / len(set(tokenize("What did Ana read?")))  # "read" of "ana", "read"
    assert covered > 0.5 and covered == pytest.approx(0.5 + SIMPLE.rerank.weight * 2 * share)
    bare = ablate(ablate(SIMPLE, "rerank"), "speaker")
    assert episode_score(ana, 0.5, asked, bare, 0.3 * ana.salience) == pytest.approx(
        0.5 + 0.3 * ana.salience
    )


def test_credibility_adds_the_weighted_signals_with_weights_clamped() -> None:
    signals = {"specificity": 1.0, "grounding": 0.5, "rigor": 0.0}
    assert credibility_bonus(signals, None) == 0.0
    weights = {"specificity": 0.9, "grounding": 0.2, "rigor": 0.3, "objectivity": -1.0}
    assert credibility_bonus(signals, weights) == pytest.approx(0.3 * 1.0 + 0.2 * 0.5)
    told = episode("e", "I sleep eight hours.")
    plain = ablate(SIMPLE, "rerank")
    asked = question("How long do I sleep?", weights={"specificity": 0.2})
    assert episode_score(told, 0.5, asked, plain) == 0.5  # no ESS: zero signals


def test_the_answering_side_leads_and_a_reply_only_match_is_context() -> None:
    turns = SIMPLE.turns
    assert sides(1.0, {"user"}, False, turns) == {"user": 1.0, "agent": 0.5}
    assert sides(1.0, {"agent", "user"}, True, turns) == {"agent": 1.0, "user": 0.5}
    assert sides(1.0, {"agent"}, False, turns) == {"user": 0.5, "agent": 0.5}
    assert sides(1.0, {"agent", "context"}, False, turns)["user"] == 0.5
    assert sides(1.0, {"agent"}, False, ablate(SIMPLE, "reply").turns)["user"] == 1.0


def test_shape_factors_by_turn_shape() -> None:
    turns = SIMPLE.turns
    bare = episode("b", "What is my dog called?")
    assert shape_factors(bare, False, turns)[0] == BARE_QUESTION_FACTOR
    asks = episode("q", "Ana: Wow! What did you paint?")
    question_factor, brevity_factor = shape_factors(asks, False, turns)
    assert question_factor == pytest.approx(1 - turns.question_discount * 0.5)
    words = content_words(asks)
    assert brevity_factor == pytest.approx(
        1 - turns.brevity_discount * (1 - words / turns.brevity_words)
    )
    paired = episode("p", "Ana: What did you paint?", "A lake at dawn.")
    assert shape_factors(paired, True, turns) == []  # both sides: neither discount
    long = episode("l", "Ana: " + " ".join(f"word{i}" for i in range(60)))
    assert shape_factors(long, False, turns) == [1.0, 1.0]
    off = ablate(ablate(SIMPLE, "questions"), "brevity").turns
    assert shape_factors(asks, False, off) == []


# ---------------------------------------------------------------- combine and assemble


def test_passes_combine_at_each_episodes_best_relevance_and_proximity() -> None:
    one = Pass({"a": 0.5, "b": 0.2}, {}, Association(["Ana"], {"a": 0.2}))
    two = Pass({"b": 0.9}, {}, Association(["Ben"], {"a": 0.6, "b": 0.1}))
    found = combined([one, two])
    assert found.relevance == {"a": 0.5, "b": 0.9}
    assert found.proximity == {"a": 0.6, "b": 0.1}
    assert found.entities == ["Ana", "Ben"]
    assert found.ranked(1) == ["b"]
    found.demote({"b": 0.5, "gone": 0.1})
    assert found.relevance == {"a": 0.5, "b": 0.45}
    single = combined([one])
    assert single.relevance is one.relevance


def test_a_candidate_carries_its_score_sides_and_provenance() -> None:
    acc = accumulate(
        SIMPLE,
        [
            ("dense", "derivatives", [hit("p", 0.6, "Ana: What did you paint?")]),
            ("dense", "prospective", [hit("p", 0.4, "What did Ana paint?", derivative_text="d")]),
        ],
    )
    turn = episode("p", "Ana: What did you paint?", "A lake at dawn.")
    asked = question("What did Ana paint in June?")
    made = candidate(Ranked(turn, acc.episodes["p"], 0.8, 0.1), asked, SIMPLE)
    score = episode_score(turn, 0.8, asked, SIMPLE)
    assert made.score == score and made.sides == {"user": score, "agent": score * 0.5}
    assert made.fragments == ["Ana: What did you paint?", "d"]
    assert made.questions == ["What did Ana paint?"]
    assert made.similarity == 0.6 and made.proximity == 0.1 and made.relevance == 0.8
    assert made.in_window and made.source == "search"
    # a bare question to the agent, answered only with "I don't remember": both sides scaled
    bare = episode("b", "What did I paint?", "I don't remember you telling me that.")
    scaled = candidate(Ranked(bare, acc.episodes["p"], 0.8), asked, SIMPLE)
    raw = episode_score(bare, 0.8, asked, SIMPLE)
    assert scaled.score == raw * BARE_QUESTION_FACTOR
    assert scaled.sides == {
        "user": raw * BARE_QUESTION_FACTOR,
        "agent": raw * 0.5 * BARE_QUESTION_FACTOR,
    }


def test_the_assembly_keeps_the_best_and_only_what_may_be_shown() -> None:
    asked = question("anything")
    ranked = [
        Ranked(episode(f"e{i}", f"Ana: turn number {i} " + "word " * 50), Found(), 1.0 - i / 100)
        for i in range(40)
    ]
    out = episode_candidates(ranked, asked, ablate(SIMPLE, "rerank"))
    assert len(out) == SIMPLE.search.max_candidates
    assert [c.episode_uid for c in out[:3]] == ["e0", "e1", "e2"]
    assert all(c.source == "entity" for c in out)  # nothing matched: the associative path's
    deeper = changed(SIMPLE, {"rerank.depth": 50})
    assert rerank_depth(deeper) == 50 and rerank_depth(ablate(deeper, "rerank")) == 30
    later = episode("x", "later", created_at=NOW + timedelta(days=1))
    faint = episode("y", "faint", salience=0.05)
    archived = episode("z", "archived", archived=True)
    assert not any(shown(e, asked, SIMPLE) for e in (later, faint, archived, None))
    assert shown(episode("ok", "ok"), asked, SIMPLE)


def test_the_question_is_read_once() -> None:
    read = Question.read(
        ["What did you recommend for my trip?", "my sister's trip"],
        NOW,
        [parse_time("in June", NOW), parse_time("x", NOW)],
        ["Lisbon"],
        SIMPLE,
    )
    assert read.windows and read.windows[0].expression
    assert read.named == {"lisbon"} and read.about_agent
    assert "user's sister" in read.subjects and "lisbon" in read.subjects
    assert read.tokens[0] == set(tokenize("What did you recommend for my trip?"))
    assert not Question.read(
        ["what did you say?"], NOW, [], [], ablate(SIMPLE, "turns")
    ).about_agent
