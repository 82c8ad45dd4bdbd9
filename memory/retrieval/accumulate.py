"""Accumulate: the hits of one pass collapsed to episodes.

Every hit points at its episode (`episode_uid`); an episode scores, in each list (dense, sparse,
summaries), as its best point there (max-sim over the fragments of a long turn, so one reply
never fills a list), and keeps what matched: the exact fragments and the prospective questions,
best first, and the roles of the points (`user`, `agent`, `chunk`, or context). Knowledge hits
go to the facts (`FactHits`); the episodes the associative path points at join with nothing
matched. Passes (sub-queries) merge by each episode's best (`merged`).

Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memory.retrieval.facts import FactHits
from memory.retrieval.fusion import ScoredList
from memory.retrieval.recipes import Recipe
from memory.stores.base import VectorHit
from memory.write.contextual import CONTEXT_ROLE

__all__ = ["Accumulated", "Found", "accumulate", "merged"]


@dataclass(slots=True)
class Found:
    """What one pass (or several, `merged`) found of one episode."""

    dense: float | None = None
    """Its best dense score (cosine similarity)."""
    sparse: float | None = None
    """Its best sparse score."""
    fragments: dict[str, float] = field(default_factory=dict)
    """Exact fragment text -> its best score (context derivatives are not shown)."""
    questions: dict[str, float] = field(default_factory=dict)
    """Prospective question -> its best score."""
    payload: Mapping[str, object] = field(default_factory=dict)
    """The payload of the first point found (empty: found by the associative path alone)."""
    roles: set[str] = field(default_factory=set)
    """Roles (`user`, `agent`, `chunk`, context) of the points that matched."""

    def add(self, dense: bool, score: float, payload: Mapping[str, object]) -> str:
        """Take one matching point into account; its role."""
        if dense:
            self.dense = score if self.dense is None or score > self.dense else self.dense
        else:
            self.sparse = score if self.sparse is None or score > self.sparse else self.sparse
        role = str(payload.get("role", ""))
        self.roles.add(role)
        text = str(payload.get("text", ""))
        if "derivative_text" in payload:  # a prospective question: shown apart
            _keep_best(self.questions, text, score)
            text = str(payload["derivative_text"])
        if role != CONTEXT_ROLE:
            _keep_best(self.fragments, text, score)
        return role


def _keep_best(best: dict[str, float], text: str, score: float) -> None:
    if score > best.get(text, 0.0):
        best[text] = score
    else:
        best.setdefault(text, 0.0)


@dataclass(slots=True)
class Accumulated:
    """One pass's hits collapsed: what it found of each episode, its ranked lists, the texts
    of its sparse hits and its knowledge hits."""

    episodes: dict[str, Found] = field(default_factory=dict)
    lists: dict[str, ScoredList] = field(default_factory=dict)
    """`dense`, `sparse` and `summaries`: each episode's best score in each."""
    lexical: list[tuple[float, str]] = field(default_factory=list)
    """(score, text) of every sparse turn hit, in the order found (the fit of `dense_gain`)."""
    facts: FactHits = field(default_factory=FactHits)

    def found(self, uid: str, payload: Mapping[str, object]) -> Found:
        """The episode's entry, made on its first hit (keeping that hit's payload)."""
        entry = self.episodes.get(uid)
        if entry is None:
            entry = self.episodes[uid] = Found(payload=payload)
        return entry


def accumulate(
    recipe: Recipe,
    searches: Iterable[tuple[str, str, Sequence[VectorHit]]],
    pointers: Iterable[str] = (),
) -> Accumulated:
    """The hits of one pass, as (mode, kind, hits) per search, collapsed to episodes; the
    episodes in `pointers` (the associative path's) join with nothing matched."""
    out = Accumulated(
        lists={
            "dense": ScoredList("dense", "cosine", recipe.fusion.dense_weight),
            "sparse": ScoredList("sparse", "top", recipe.fusion.sparse_weight),
            "summaries": ScoredList("summaries", "top", recipe.summaries.weight),
        }
    )
    for mode, kind, hits in searches:
        if kind == "knowledge":
            out.facts.add(mode, hits)
        elif kind == "summaries":
            _add_session_turns(out, hits)
        else:
            _add_turn_hits(out, mode, hits, recipe.search.contextual)
    for uid in pointers:
        out.episodes.setdefault(uid, Found())
    out.facts.sparse_scale = max(
        (ep.sparse for ep in out.episodes.values() if ep.sparse), default=0.0
    )
    return out


def _add_session_turns(out: Accumulated, hits: Sequence[VectorHit]) -> None:
    """The turns a matched summary brought in: the summaries' list, and their text as a
    fragment found (scored 0: the summary matched, not the turn)."""
    for hit in hits:
        uid = str(hit.payload.get("episode_uid", ""))
        ep = out.episodes.get(uid) or out.episodes.setdefault(uid, Found(payload=hit.payload))
        out.lists["summaries"].add(uid, hit.score)
        if str(hit.payload.get("role", "")) != CONTEXT_ROLE:
            ep.fragments.setdefault(str(hit.payload.get("text", "")), 0.0)


def _add_turn_hits(
    out: Accumulated, mode: str, hits: Sequence[VectorHit], contextual: bool
) -> None:
    scored = out.lists[mode]
    dense = mode == "dense"
    for hit in hits:  # hot: a pass reads hundreds of hits
        payload = hit.payload
        if not contextual and str(payload.get("role", "")) == CONTEXT_ROLE:
            continue
        uid = str(payload.get("episode_uid", ""))
        if not uid:
            continue
        scored.add(uid, hit.score)
        out.found(uid, payload).add(dense, hit.score, payload)
        if not dense:
            out.lexical.append((hit.score, str(payload.get("text", ""))))


def merged(passes: Sequence[Mapping[str, Found]], uids: Sequence[str]) -> Mapping[str, Found]:
    """What the passes found of each of `uids` (an episode found by several: its best dense
    score, the union of its roles, its fragments and questions at their best); one pass's own,
    as it is."""
    if len(passes) == 1:
        return passes[0]
    out: dict[str, Found] = {}
    for uid in uids:
        for found in passes:
            ep = found.get(uid)
            if ep is None:
                continue
            mine = out.setdefault(uid, Found(payload=ep.payload))
            mine.roles |= ep.roles
            if ep.dense is not None:
                mine.dense = max(mine.dense or -1.0, ep.dense)
            for text, s in ep.fragments.items():
                mine.fragments[text] = max(mine.fragments.get(text, 0.0), s)
            for text, s in ep.questions.items():
                mine.questions[text] = max(mine.questions.get(text, 0.0), s)
    return out
