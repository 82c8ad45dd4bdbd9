"""Progressive compression of a live thread: verbatim -> key exchanges -> summary -> impression.

The reply prompt shows the newest messages of a thread verbatim. When a turn leaves that window
it moves down into the *key exchanges* (its important sentences, filler dropped); when the key
exchanges pass their token budget, the oldest are folded into the *summary* (themes, decisions,
facts) and what the summary cannot hold into the *impression* (the overall sense, a few lines).
Budgets drive every move, not time. The layers are a view: the episodes stay in the store.

This module holds the layers' record, the extractive transitions (what survives is decided by
the offline sentence scoring of `memory.text.salient`: emotion, decisions, named entities,
novelty and identity statements are kept; greetings, repetition and the agent's filler are
dropped), and where the layers are kept: one JSON document per thread in the graph store's
per-tenant state (key `thread:<thread id>`). The LLM task that can replace the summary/impression step lives in
`tasks.compress`; it answers the same digest shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field, ValidationError

from memory.retrieval.ranking import estimate_tokens
from memory.schema import Episode
from memory.stores.base import GraphStore
from memory.text.salient import (
    cut,
    score,
    sentences,
)
from memory.text.sparse import token_set

VERBATIM_TURNS = 4
"""Turns of a thread left to the verbatim layer (the reply shows its last 10 messages: these
four turns, the current message and the reply before the oldest of them)."""

MOVE_BATCH = 200
"""At most this many turns move down per update (a long thread seen for the first time catches
up over several turns)."""

EXCHANGE_CHARS = 600
"""Longest text one key exchange keeps."""

POINT_CHARS = 300
"""Longest summary point."""

IMPRESSION_POINT_CHARS = 160
"""Longest clause of the impression."""

KEEP = 0.6
"""Minimum score of a user sentence kept as a key exchange: a sentence with some content (about
eight content words, or fewer with a cue); greetings and acknowledgements never reach it. The
budget, not this floor, decides what stays detailed: an overflow folds the oldest into the
summary, where sentences compete on their scores."""

KEEP_AGENT = 1.4
"""Minimum score of an agent sentence kept (the agent's own words matter less)."""

FOLD_MIN = 0.9
"""Minimum score of a sentence that enters the summary or the impression: it must carry a cue
(emotion, a decision, an identity statement, a name or number), not only everyday content."""

SENTENCES_PER_TURN = 3
"""User sentences an exchange keeps at most (the best, in their order)."""

DRAIN_TO = 0.75
"""An overflowing layer is drained to this fraction of its budget, so compressions come in
batches (one LLM call per batch) instead of on every turn."""

STATE_PREFIX = "thread:"


@dataclass(frozen=True, slots=True)
class Budgets:
    """Token budgets of the compressed layers (the verbatim layer is counted in messages)."""

    exchanges: int = 2000
    summary: int = 500
    impression: int = 200


class Exchange(BaseModel):
    """A turn that left the verbatim layer, reduced to what matters."""

    uid: str
    at: datetime
    text: str


class ThreadLayers(BaseModel):
    """The compressed layers of one thread and how far they reach."""

    thread_id: str
    exchanges: list[Exchange] = Field(default_factory=list)
    summary: list[str] = Field(default_factory=list)
    impression: str = ""
    covered_at: datetime | None = None
    """created_at of the newest turn folded into the layers (the cursor, with `covered_uid`)."""
    covered_uid: str | None = None
    first_at: datetime | None = None
    """When the oldest turn folded into the layers was said."""
    turns: int = 0
    """Turns folded into the layers so far."""
    failures: int = 0
    """Compressions that failed validation in a row (the layers stayed as they were)."""

    @property
    def empty(self) -> bool:
        """True when no layer holds anything yet."""
        return not (self.exchanges or self.summary or self.impression)

    @property
    def cursor(self) -> tuple[datetime, str] | None:
        """The last turn the layers cover, as (time, episode uid); None before the first."""
        if self.covered_at is None or self.covered_uid is None:
            return None
        return self.covered_at, self.covered_uid


# --------------------------------------------------------------------------- key exchanges

_LABEL = re.compile(r"^\s*([A-Z][\w .'-]{0,40}):\s+")


def _body(text: str) -> tuple[str, str]:
    """(speaker label, text) of a `Name: text` turn; no label gives ''."""
    match = _LABEL.match(text)
    if match and match.group(1) not in ("User", "Agent"):
        return match.group(1), text[match.end() :]
    return "", text


def key_exchange(episode: Episode, seen: set[str]) -> Exchange | None:
    """The turn's best sentences as a key exchange (None when it was all filler); the kept
    sentences' words join `seen`, so later repetition scores low."""
    speaker, user = _body(episode.user_text)
    scored = [(score(s, seen), i, s) for i, s in enumerate(sentences(user))]
    best = sorted((x for x in scored if x[0] >= KEEP), reverse=True)[:SENTENCES_PER_TURN]
    kept_user = [s for _, _, s in sorted(best, key=lambda x: x[1])]
    agent_scored = [(score(s, seen, agent=True), s) for s in sentences(episode.agent_text)]
    kept_agent = [s for value, s in sorted(agent_scored, reverse=True)[:1] if value >= KEEP_AGENT]
    if not kept_user and not kept_agent:
        return None
    for s in [*kept_user, *kept_agent]:
        seen.update(token_set(s))
    parts = []
    if kept_user:
        parts.append(f"{speaker or 'User'}: " + " ".join(kept_user))
    if kept_agent:
        parts.append("Agent: " + " ".join(kept_agent))
    text = cut(" / ".join(parts), EXCHANGE_CHARS)
    return Exchange(uid=episode.uid, at=episode.created_at, text=text)


def layer_tokens(items: Iterable[str]) -> int:
    """Tokens of a layer's texts as the prompt shows them (one line each)."""
    return sum(estimate_tokens(t) + 2 for t in items)


EXCHANGE_TAG_TOKENS = 10
"""What the prompt's `<exchange date="...">` fence adds to each key exchange."""


def exchange_tokens(exchanges: Iterable[Exchange]) -> int:
    """Tokens of key exchanges as the prompt shows them, fences included (the budget's unit)."""
    return sum(estimate_tokens(e.text) + EXCHANGE_TAG_TOKENS for e in exchanges)


# --------------------------------------------------------------------------- transitions


def advance(
    layers: ThreadLayers,
    episodes: Sequence[Episode],
    budgets: Budgets,
    agent_text: Callable[[str], str] = str,
) -> tuple[ThreadLayers, list[Episode], list[Exchange]]:
    """Move the turns that left the verbatim window into the key exchanges.

    `episodes` are the thread's turns after the layers' cursor, oldest first. All but the
    newest `VERBATIM_TURNS` move down. Returns the new layers (cursor advanced), the turns that
    moved, and the oldest exchanges that no longer fit the exchanges' budget (the overflow,
    removed from the layers: the caller folds them into the summary). `agent_text` cleans the
    agent's side first (the agent layer passes the one that drops memories it quoted back).
    """
    moving = list(episodes[: max(0, len(episodes) - VERBATIM_TURNS)])
    if not moving:
        return layers, [], []
    seen: set[str] = set()
    for e in layers.exchanges:
        seen.update(token_set(e.text))
    exchanges = list(layers.exchanges)
    for episode in moving:
        clean = episode.model_copy(update={"agent_text": agent_text(episode.agent_text)})
        exchange = key_exchange(clean, seen)
        if exchange is not None:
            exchanges.append(exchange)
    overflow: list[Exchange] = []
    if exchange_tokens(exchanges) > budgets.exchanges:
        target = int(budgets.exchanges * DRAIN_TO)
        while exchanges and exchange_tokens(exchanges) > target:
            overflow.append(exchanges.pop(0))
    last = moving[-1]
    moved = layers.model_copy(
        update={
            "exchanges": exchanges,
            "covered_at": last.created_at,
            "covered_uid": last.uid,
            "first_at": layers.first_at or moving[0].created_at,
            "turns": layers.turns + len(moving),
        }
    )
    return moved, moving, overflow


def _point(exchange: Exchange, sentence: str) -> str:
    return cut(f"{exchange.at.date().isoformat()}: {sentence}", POINT_CHARS)


def _exchange_sentences(exchange: Exchange) -> list[tuple[str, bool]]:
    """(sentence, said by the agent) of a key exchange's text."""
    out: list[tuple[str, bool]] = []
    for part in exchange.text.split(" / "):
        label, _, body = part.partition(": ")
        agent = label == "Agent"
        out.extend((s, agent) for s in sentences(body or part))
    return out


def _greedy(
    candidates: list[tuple[int, str, bool]],
    budget: int,
    limit: int,
    *,
    floor: float = FOLD_MIN,
    body: Callable[[str], str] | None = None,
) -> tuple[list[str], list[str]]:
    """Pick candidates (order, text, agent) best first while they fit `budget` tokens; novelty is
    judged against what is already picked, on `body(text)` (the text without its date).
    Returns (kept in their original order, dropped)."""
    body = body or _undated
    seen: set[str] = set()
    pool = list(candidates)
    kept: list[tuple[int, str]] = []
    dropped: list[str] = []
    used = 0
    while pool:
        values = [score(body(t), seen, agent=a) for _, t, a in pool]
        best = max(range(len(pool)), key=lambda i: (values[i], -pool[i][0]))
        order, text, _ = pool.pop(best)
        text = cut(text, limit)
        cost = estimate_tokens(text) + 2
        if values[best] < floor or used + cost > budget:
            dropped.append(text)
            continue
        kept.append((order, text))
        used += cost
        seen.update(token_set(body(text)))
    return [t for _, t in sorted(kept)], dropped


_SPEAKER = re.compile(r"^[^:]{1,40}: ")


def _unlabelled(point: str) -> str:
    return _SPEAKER.sub("", point, count=1)


def salient_points(
    episodes: Sequence[Episode], budget: int, agent_text: Callable[[str], str] = str
) -> list[str]:
    """The best sentences of a run of turns (a session's summary), `Speaker: sentence` each, in
    the order they were said, within `budget` tokens.

    Each turn is first reduced to its key exchange (filler and repetition dropped), then the
    sentences compete on their scores as in the summary layer, with the key exchanges' floor
    (`KEEP`) rather than the fold's: a session's summary must say what it was about even when
    nothing carried a cue. `agent_text` cleans the agent's side first."""
    seen: set[str] = set()
    candidates: list[tuple[int, str, bool]] = []
    for episode in episodes:
        clean = episode.model_copy(update={"agent_text": agent_text(episode.agent_text)})
        exchange = key_exchange(clean, seen)
        if exchange is None:
            continue
        for part in exchange.text.split(" / "):
            label, _, text = part.partition(": ")
            for sentence in sentences(text or part):
                candidates.append((len(candidates), f"{label}: {sentence}", label == "Agent"))
    kept, _ = _greedy(candidates, budget, POINT_CHARS, floor=KEEP, body=_unlabelled)
    return kept


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}: (\(agent\) )?")


def _undated(point: str) -> str:
    return _DATE.sub("", point)


def extractive_digest(
    summary: Sequence[str],
    impression: str,
    overflow: Sequence[Exchange],
    budgets: Budgets,
) -> tuple[list[str], str]:
    """The offline summary/impression step: fold `overflow` into the summary; what the summary
    cannot hold falls into the impression. Returns (summary points, impression)."""
    candidates: list[tuple[int, str, bool]] = [
        (i, p, p.startswith("(agent)") or "(agent) " in p[:20]) for i, p in enumerate(summary)
    ]
    for exchange in overflow:
        for sentence, agent in _exchange_sentences(exchange):
            text = ("(agent) " if agent else "") + sentence
            candidates.append((len(candidates), _point(exchange, text), agent))
    kept, evicted = _greedy(candidates, budgets.summary, POINT_CHARS)
    old = [(i, s, False) for i, s in enumerate(sentences(impression))]
    fallen = [(len(old) + i, _undated(p), False) for i, p in enumerate(evicted)]
    felt, _ = _greedy([*old, *fallen], budgets.impression, IMPRESSION_POINT_CHARS)
    return kept, " ".join(_sentence_end(s) for s in felt)


def _sentence_end(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?…]" else text + "."


def digest_error(summary: Sequence[str], impression: str, budgets: Budgets) -> str | None:
    """Why a digest cannot replace the layers (over a budget, or empty), else None."""
    if not summary and not impression.strip():
        return "the summary and the impression are both empty"
    if any(not p.strip() for p in summary):
        return "a summary point is empty"
    if layer_tokens(summary) > budgets.summary:
        return (
            f"the summary is {layer_tokens(summary)} tokens; keep it under {budgets.summary} "
            f"(about {budgets.summary * 4} characters)"
        )
    if estimate_tokens(impression) > budgets.impression:
        return (
            f"the impression is {estimate_tokens(impression)} tokens; keep it under "
            f"{budgets.impression} (about {budgets.impression * 4} characters)"
        )
    return None


# --------------------------------------------------------------------------- storage


def state_key(thread_id: str) -> str:
    """The per-tenant state key of a thread's layers."""
    return STATE_PREFIX + thread_id


async def load_layers(graph: GraphStore, tenant: str, thread_id: str) -> ThreadLayers:
    """The thread's layers (empty when none were built or the stored document is unreadable)."""
    raw = await graph.state.get(tenant, state_key(thread_id))
    if raw:
        try:
            return ThreadLayers.model_validate_json(raw)
        except ValidationError:
            pass  # rebuilt from the episodes, which are the source of truth
    return ThreadLayers(thread_id=thread_id)


async def all_layers(graph: GraphStore, tenant: str) -> list[ThreadLayers]:
    """Every thread's stored layers, by thread id (unreadable documents left out: the episodes
    rebuild them)."""
    out = []
    for key in await graph.state.keys(tenant, STATE_PREFIX):
        layers = await load_layers(graph, tenant, key.removeprefix(STATE_PREFIX))
        if not layers.empty:
            out.append(layers)
    return out


async def save_layers(graph: GraphStore, tenant: str, layers: ThreadLayers) -> None:
    """Replace the thread's layers."""
    await graph.state.put(tenant, state_key(layers.thread_id), layers.model_dump_json())
