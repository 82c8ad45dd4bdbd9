"""No poison pills: every offline heuristic returns a valid record for any text (hypothesis on
arbitrary and adversarial text: long runs of capitalised words, no spaces, 10k-word lines,
control characters, mixed scripts)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.schema import Episode
from memory.text.chunking import split_turn
from tasks.ess import EvidenceScore, heuristic_ess
from tasks.extract import Extraction, derivatives_from, heuristic_extraction, topic_slugs
from tasks.keywords import entities, topics
from tasks.route import heuristic_assessment

CAPITALISED = st.lists(
    st.from_regex(r"[A-Z][a-z]{0,30}", fullmatch=True), min_size=1, max_size=400
).map(" ".join)
NO_SPACES = st.text(alphabet=st.characters(blacklist_categories=("Zs",)), max_size=5000)
CONTROL = st.text(alphabet=st.characters(max_codepoint=0x9F), max_size=2000)
MIXED = st.text(alphabet=st.sampled_from("aZ日本語Ωжש١٢ 🙂\u200b\u202e\t\n.,!?'-"), max_size=3000)
LONG_LINE = st.integers(min_value=1, max_value=10_000).map(lambda n: " ".join(["Word"] * n))
TEXT = st.one_of(st.text(max_size=3000), CAPITALISED, NO_SPACES, CONTROL, MIXED, LONG_LINE)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def episode(user: str, agent: str) -> Episode:
    content = f"User: {user}\nAgent: {agent}" if agent else f"User: {user}"
    return Episode(
        uid="u",
        tenant="t",
        thread_id="th",
        content=content,
        user_text=user,
        agent_text=agent,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
    )


@SETTINGS
@given(user=TEXT, agent=st.one_of(st.just(""), TEXT))
def test_extraction_is_valid_for_any_text(user: str, agent: str) -> None:
    ep = episode(user, agent)
    value = heuristic_extraction(ep)
    again = Extraction.model_validate(value.model_dump(mode="json"))  # what the graph state holds
    assert again == value
    assert all(1 <= len(e.name) <= 100 for e in value.entities)
    for d in derivatives_from(ep, value, fallback=True):
        assert d.text.strip()
    assert all(slug for slug in topic_slugs(value))


@SETTINGS
@given(text=TEXT)
def test_keywords_and_names_are_bounded(text: str) -> None:
    for name, _ in entities(text):
        assert 2 <= len(name) <= 100 and "\n" not in name
    assert all(topics(text))


@SETTINGS
@given(text=TEXT)
def test_evidence_and_route_are_valid_for_any_text(text: str) -> None:
    ess = heuristic_ess(text)
    assert EvidenceScore.model_validate(ess.model_dump(mode="json")) == ess
    assert 0.0 <= ess.score <= 1.0
    decision = heuristic_assessment(text)
    assert decision.route.kind in ("NONE", "SIMPLE", "TEMPORAL", "AGGREGATION", "BELIEF_QUERY")


@SETTINGS
@given(user=TEXT, agent=TEXT)
def test_the_splitter_covers_any_turn(user: str, agent: str) -> None:
    chunks = split_turn(user, agent)
    assert len(chunks) <= 64
    if user.strip() or agent.strip():
        assert chunks and all(c.text.strip() for c in chunks)


def test_the_issue_supplement_list_is_not_a_poison_pill() -> None:
    names = ", ".join(
        ["Vitamin D Three", "Magnesium Glycinate", "Omega Three Fish Oil", "Zinc Picolinate"]
    )
    text = "Agent: Here is your stack: " + " ".join(
        f"{w} Capsule Extra Strength Formula Plus" for w in names.split()
    )
    value = heuristic_extraction(episode("What should I take?", text))
    assert all(len(e.name) <= 100 for e in value.entities)
