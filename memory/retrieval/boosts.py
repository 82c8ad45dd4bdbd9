"""Boosts: what adjusts a relevance after the fusion, each a small pure function.

On a pass's relevance (episode uid -> fused score), in this order:

- **smoothing** along the thread: an episode gains a share of its better neighbour's relevance
  (`Graph.smoothing`; `paired_smoothing` for a user + assistant episode, which holds its own
  answer);
- **graph proximity** of the episode to the entities the query names (`Graph.proximity_weight`);
- the **time window** the question names: an episode created inside it scores x (1 +
  `Time.boost`).

On one episode's score, once the passes are combined and scaled by the best (`episode_score`):
a speaker the question names (`Turns.speaker_boost`), the coverage rerank (`Rerank`), memory's
state (`memory.retrieval.state`) and the credibility weights a route asks for; then the **sides** of
a user + assistant turn (`sides`), and the **turn-shape discounts** (`shape_factors`): a bare
question to the agent, and, for a one-sided turn, the share of its sentences that ask and how
little it says.

No I/O: the callers read the graph (thread links, episodes) and pass what they read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, MutableMapping
from datetime import datetime

from memory.retrieval.question import Question
from memory.retrieval.ranking import best_coverage, smooth
from memory.retrieval.recipes import Graph, Recipe, Turns
from memory.schema import SIGNAL_NAMES, Episode, as_utc, normalise_text
from memory.stores.graph.episodes import ThreadLinks
from memory.text.questions import BARE_QUESTION_FACTOR, asks_share, is_bare_question
from memory.text.sparse import token_set
from memory.text.timeparse import TimeWindow
from memory.write.contextual import speaker_label

__all__ = [
    "content_words",
    "created_of",
    "credibility_bonus",
    "episode_score",
    "shape_factors",
    "signals_of",
    "sides",
    "smoothed",
    "smoothing_on",
    "with_proximity",
    "within_window",
]


def smoothing_on(graph: Graph) -> bool:
    """Whether the recipe smooths along the thread (and so needs the thread's links)."""
    return graph.smoothing > 0 or graph.paired_smoothing > 0


def smoothed(relevance: Mapping[str, float], links: ThreadLinks, graph: Graph) -> dict[str, float]:
    """`relevance` with each episode lent a share of its better neighbour's on the thread
    (`links`: the chain among the candidates; only candidates lend)."""
    return smooth(
        relevance,
        links.adjacent,
        graph.smoothing,
        paired=links.paired,
        paired_weight=graph.paired_smoothing,
    )


def with_proximity(
    relevance: MutableMapping[str, float], proximity: Mapping[str, float], weight: float
) -> None:
    """Add `weight` x each episode's graph proximity to the query's entities (in place)."""
    for uid in relevance:
        relevance[uid] += weight * proximity.get(uid, 0.0)


def within_window(
    relevance: MutableMapping[str, float],
    payloads: Mapping[str, Mapping[str, object]],
    window: TimeWindow | None,
    boost: float,
) -> None:
    """Scale by (1 + `boost`) the relevance of each episode created inside `window` (in place;
    its creation time read from the payload of its hit): a turn is not lifted by its date
    alone."""
    if window is None or not boost:
        return
    for uid in relevance:
        created = created_of(payloads[uid])
        if created is not None and window.contains(created):
            relevance[uid] *= 1.0 + boost


def created_of(payload: Mapping[str, object]) -> datetime | None:
    """The `created_at` of a hit's payload (a datetime or ISO string), in UTC; None when it
    has none or it does not parse."""
    value = payload.get("created_at")
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, str):
        try:
            return as_utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def credibility_bonus(signals: Mapping[str, float], weights: Mapping[str, float] | None) -> float:
    """Sum of weight x signal over the five credibility signals (weights clamped to [0, 0.3])."""
    if not weights:
        return 0.0
    return sum(min(0.3, max(0.0, weights.get(n, 0.0))) * signals.get(n, 0.0) for n in SIGNAL_NAMES)


def speaker_lift(episode: Episode, relevance: float, named: Collection[str], turns: Turns) -> float:
    """What a turn gains when the question names its speaker: `speaker_boost` x its relevance
    (0 otherwise, and for a turn without a `Name:` label)."""
    if not turns.speaker_boost or not named:
        return 0.0
    speaker, _ = speaker_label(episode.user_text)
    if speaker and normalise_text(speaker) in named:
        return turns.speaker_boost * relevance
    return 0.0


def episode_score(
    episode: Episode, relevance: float, question: Question, recipe: Recipe, state: float = 0.0
) -> float:
    """An episode's score before its sides and discounts: its relevance (scaled by the best),
    + the speaker lift, + the coverage rerank of its text, + `state` (memory's state terms,
    `memory.retrieval.state.state_terms`; 0 before sleep has run), + the credibility bonus of
    the weights the route asked for."""
    score = relevance
    score += speaker_lift(episode, relevance, question.named, recipe.turns)
    if recipe.rerank.on:
        score += recipe.rerank.weight * best_coverage(question.tokens, episode.content)
    score += state
    score += credibility_bonus(signals_of(episode), question.signal_weights)
    return score


def signals_of(episode: Episode) -> dict[str, float]:
    """The episode's five credibility signals; zeros without an ESS (it was indexed with zero
    signals, `memory.write.episodes`, so its points' payloads hold zeros too)."""
    return episode.ess.signals() if episode.ess else dict.fromkeys(SIGNAL_NAMES, 0.0)


def sides(
    score: float, roles: Collection[str], about_agent: bool, turns: Turns
) -> dict[str, float]:
    """The score of each side of a user + assistant turn scoring `score` (`roles`: those of
    the points that matched): the answering side (the agent's when the question asks what it
    said and its reply matched, else the user's) at `score`, the other, context, at
    `reply_weight` x it; both as context when only the reply matched."""
    answer = "agent" if about_agent and "agent" in roles else "user"
    context = "user" if answer == "agent" else "agent"
    out = {answer: score, context: score * turns.reply_weight}
    # Found through the reply alone (context derivatives hold earlier turns too, so they are
    # not the user's side): the user's side answers nothing the question asked.
    if (
        answer == "user"
        and turns.reply_only_as_context
        and "agent" in roles
        and not set(roles) & {"user", "chunk"}
    ):
        out["user"] = score * turns.reply_weight
    return out


def shape_factors(episode: Episode, paired: bool, turns: Turns) -> list[float]:
    """The factors that scale a turn by its shape, in the order they apply: a bare question to
    the agent (`BARE_QUESTION_FACTOR`: kept, never above the statements that answer it); then,
    for a one-sided turn (`paired` False), the share of its sentences that ask
    (`question_discount`, not for a bare question) and how little it says
    (`brevity_discount`). A turn with both sides takes neither of the last two: a user asks the
    agent by design, and a reply's length says nothing of what the user told."""
    bare = is_bare_question(episode.user_text, episode.agent_text)
    out = [BARE_QUESTION_FACTOR] if bare else []
    if paired:
        return out
    if turns.question_discount and not bare:
        said = speaker_label(episode.user_text)[1]  # "Name: Wow! What did you paint?"
        out.append(1.0 - turns.question_discount * asks_share(said))
    if turns.brevity_discount:
        short = max(0.0, 1.0 - content_words(episode) / turns.brevity_words)
        out.append(1.0 - turns.brevity_discount * short)
    return out


def content_words(episode: Episode) -> int:
    """Distinct content words (`sparse.token_set`) of what an episode says: the user's side
    without its `Name:` label, and the agent's."""
    said = speaker_label(episode.user_text)[1]
    return len(token_set(f"{said} {episode.agent_text or ''}"))
