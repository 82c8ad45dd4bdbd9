"""What retrieval returns: one `Candidate` per episode or fact found, best first.

Data only (shared by `memory.retrieval.retrieve` and `memory.retrieval.facts`); no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memory.schema import as_utc

if TYPE_CHECKING:
    from memory.schema import Episode

Source = Literal["search", "neighbour", "entity", "cause", "concept", "cornerstone"]


@dataclass(slots=True)
class Candidate:
    """One episode brought back by retrieval. Higher `score` is better."""

    episode_uid: str
    score: float
    """Final score: relevance scaled to [0, 1] by the best, plus the rerank, memory's state
    (salience, recency, association; once sleep has run) and credibility terms."""
    similarity: float | None
    """Best dense cosine similarity of any of the episode's points, or of the fact's (None: not
    measured). Not a ranking term: the offline answer reads it (`tasks.offline_answer`)."""
    created_at: datetime
    thread_id: str
    content: str
    """The episode as stored (user and agent text)."""
    fragments: list[str] = field(default_factory=list)
    """Matched exact derivative texts, best first (context derivatives are not shown)."""
    questions: list[str] = field(default_factory=list)
    """Prospective questions that matched, best first."""
    source: Source = "search"
    neighbour_of: str | None = None
    """The candidate it was reached from: a temporal neighbour's seed, or the seed whose
    concept a hop through a concept (`source` "concept") or whose link a hop to a cornerstone
    (`source` "cornerstone") came from."""
    offset: int = 0
    """Position relative to `neighbour_of` on the TEMPORAL_NEXT chain (negative: earlier)."""
    signals: dict[str, float] = field(default_factory=dict)
    relevance: float = 0.0
    """Fused dense + sparse + proximity + time score before the final ranking."""
    proximity: float = 0.0
    """Graph proximity from the query's entities, in [0, 1]."""
    in_window: bool = False
    """Created inside a time window the question names."""
    salience: float = 0.5
    association: float = 0.0
    """The best relevance among the candidates it is linked to (co-retrieval, concept), in
    [0, 1]; 0 while the state terms do not weigh (`memory.retrieval.state`)."""
    kind: Literal["episode", "fact"] = "episode"
    uid: str = ""
    """The result's own uid: the episode's, or the fact's."""
    sources: list[str] = field(default_factory=list)
    """The episodes it comes from: the episode itself, or the episodes that state the fact."""
    sides: dict[str, float] = field(default_factory=dict)
    """For an episode with both sides (user and agent text): each side's own score. The side
    that answers (the agent's when the question asks what it said and its reply matched, else
    the user's) scores `score`; the other is context and scores `score` x
    `Turns.reply_weight`, so it follows the answering sides of the next candidates. A fact's
    are those of its source turns when one of them holds a reply: the user's side stated it
    and answers, the reply is context (both at `score` when the question asks what the agent
    said)."""
    fact: dict[str, Any] | None = None
    """For a fact: its kind, subject, attribute, validity, successor, grounding and how it was
    found (`via`)."""
    replaces: str = ""
    """The uid of the candidate whose place it took as the newest (or oldest) statement of the
    same thing (`memory.retrieval.current`); "" when it holds its own."""
    said: str = "stated"
    """Where the episode's words came from (`memory.schema.EpisodeSource`; a fact: its first
    source's): the reply labels another person's words and an app's notes as such."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly copy (datetimes as ISO strings)."""
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        return out


def two_sided(episode: Episode) -> bool:
    """Whether the episode holds a message and the reply to it (both texts non-blank)."""
    return bool(episode.user_text.strip() and episode.agent_text.strip())


def reached(
    episode: Episode,
    seed: Candidate,
    share: float,
    source: Source,
    reply_weight: float,
    offset: int = 0,
) -> Candidate:
    """An episode reached from a candidate (`seed`) rather than found by search: a temporal
    neighbour (`offset` its place on the chain), a member of the seed's concept or a cornerstone
    linked to it; it scores
    `share` x the seed's score and relevance, its user's side answering."""
    return from_episode(
        episode,
        score=seed.score * share,
        relevance=seed.relevance * share,
        source=source,
        reply_weight=reply_weight,
        neighbour_of=seed.episode_uid,
        offset=offset,
    )


def from_episode(
    episode: Episode,
    *,
    score: float,
    source: Source,
    reply_weight: float,
    neighbour_of: str,
    offset: int = 0,
    relevance: float = 0.0,
) -> Candidate:
    """An episode as a candidate search did not find but another memory led to
    (`neighbour_of`: a candidate's uid, or a recalled reverie's), scoring `score`, its user's
    side answering."""
    return Candidate(
        episode_uid=episode.uid,
        score=score,
        similarity=None,
        created_at=as_utc(episode.created_at),
        thread_id=episode.thread_id,
        content=episode.content,
        said=episode.source.value,
        source=source,
        neighbour_of=neighbour_of,
        offset=offset,
        signals=episode.ess.signals() if episode.ess else {},
        relevance=relevance,
        salience=episode.salience,
        sides=user_answers(score, reply_weight) if two_sided(episode) else {},
        uid=episode.uid,
        sources=[episode.uid],
    )


def user_answers(score: float, reply_weight: float) -> dict[str, float]:
    """`Candidate.sides` of a two-sided turn whose user's side answers: the reply is context."""
    return {"user": score, "agent": score * reply_weight}
