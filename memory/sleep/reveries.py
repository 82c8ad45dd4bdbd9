"""Reveries: the ghosts forgotten memories leave (docs/design.md section 7), read back vaguely.

`write_reverie` stores one when a faded episode (salience < 0.1) is forgotten
(`memory.sleep.plan.forget_episode`): its embedding blurred by uniform noise (+-0.3 per
coordinate, re-normalised, so a reverie is only loosely near what it was about), the ids of its
neighbours, and a one-line impression: offline a template naming its subjects ("something about
penguins, Antarctica"), with a model the model's vague line (`Impress`, from
`tasks.reverie_impression`), recalled by the template's words as well. `vague_recall` finds the
reveries a message is about: those whose impression shares a word with it, and those whose
blurred embedding is still near it. The reply shows them as faded impressions ("I vaguely
remember something about..."), never as facts or memories; their stored neighbours, the living
turns the forgotten one sat between, join the candidates (`neighbour_candidates`) and so bring
back what surrounded it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.retrieval.candidates import Candidate, from_episode
from memory.schema import Episode, as_utc, stable_uid
from memory.stores.base import SparseVector, VectorFilter, VectorPoint
from memory.text.sparse import encode_document, encode_query, token_id, tokenize

if TYPE_CHECKING:
    from memory.retrieval.recipes import Recipe
    from memory.services import Services

REVERIE_FLOOR = 0.15
"""Least cosine between a message and a reverie to recall it. The noise leaves a reverie at
roughly a third of its original similarity to anything, and unrelated texts near zero. The
noise also moves a score by about 0.05 either way, so even a message that names the memory's
subject falls under the floor now and then (about 1 in 30 for "Have I seen anything about
penguins?" against a penguin documentary), so the impression's words recall it too."""

IMPRESSION_PREFIX = "something about "
"""How every impression starts; its words match nothing (a reverie's sparse vector is built from
what follows)."""

REVERIE_SALIENCE = 0.1
"""A forgotten episode below this salience leaves a reverie."""

REVERIE_NOISE = 0.3
"""Uniform noise added to each coordinate of a reverie's embedding before re-normalising."""

IMPRESSION_WORDS = 4
"""How many subjects a reverie's impression keeps: vague, but enough words to be recalled by."""

_PREFIX_TOKENS = frozenset(tokenize(IMPRESSION_PREFIX))

Impress = Callable[[str, Sequence[str]], Awaitable[str]]
"""impress(the forgotten turn's text, the template's subjects) -> the impression, starting with
`IMPRESSION_PREFIX` (`tasks.reverie_impression`: the model's; None: the template)."""


async def vague_recall(
    services: Services, tenant: str, text: str, *, limit: int = 2, floor: float = REVERIE_FLOOR
) -> list[dict[str, Any]]:
    """The tenant's reveries `text` is about, best first: those whose impression shares a word
    with it, then those whose blurred cosine to it is at least `floor`. Each with its
    impression, when the memory was made and when it faded, and its blurred cosine."""
    if not text.strip():
        return []
    query = (await services.embedder.embed_query(text)).tolist()
    words = query_words(text)
    named = (
        await services.vectors.search("reveries", tenant, sparse=words, limit=limit)
        if words.indices
        else []
    )
    near = await services.vectors.search(
        "reveries", tenant, dense=query, limit=limit, score_threshold=floor
    )
    if named:  # their blurred cosines, so every reverie is reported on one scale
        named = await services.vectors.search(
            "reveries",
            tenant,
            dense=query,
            limit=len(named),
            filter=VectorFilter(episode_uids=[str(h.payload.get("episode_uid")) for h in named]),
        )
    # Named ones first (the message shares a word with the impression), then the near ones.
    ids = {h.id for h in named}
    hits = [*named, *(h for h in near if h.id not in ids)][:limit]
    return [
        {
            "text": str(h.payload.get("text", "")),
            "created_at": str(h.payload.get("created_at", "")),
            "faded_at": str(h.payload.get("faded_at", "")),
            "score": h.score,
            "episode_uid": str(h.payload.get("episode_uid", "")),
            "neighbours": [str(n) for n in h.payload.get("neighbours") or []],  # type: ignore[attr-defined]
        }
        for h in hits
    ]


async def neighbour_candidates(
    services: Services,
    tenant: str,
    reveries: Sequence[dict[str, Any]],
    found: Sequence[Candidate],
    recipe: Recipe,
) -> list[Candidate]:
    """The living turns a recalled reverie's memory sat between (its stored neighbours), as
    candidates after those `found`: each scores the best found score (1 with none) x the
    recipe's neighbour decay, as a chain neighbour of a top result would; the forgotten turn
    stood where the message points. Archived turns, and turns already found, are left out."""
    present = {c.episode_uid for c in found}
    seeds = {n: r["episode_uid"] for r in reveries for n in r.get("neighbours") or []}
    made = {
        r["episode_uid"]: as_utc(datetime.fromisoformat(str(r["created_at"]))) for r in reveries
    }
    wanted = [uid for uid in seeds if uid not in present]
    if not wanted:
        return []
    top = max((c.score for c in found), default=1.0)
    score = top * recipe.time.neighbour_decay
    episodes = await services.graph.episodes.get_many(tenant, wanted)
    return [
        from_episode(
            e,
            score=score,
            source="neighbour",
            reply_weight=recipe.turns.reply_weight,
            neighbour_of=seeds[e.uid],
            offset=1 if as_utc(e.created_at) > made[seeds[e.uid]] else -1,
        )
        for e in sorted(episodes, key=lambda e: wanted.index(e.uid))
        if not e.archived
    ]


def query_words(text: str) -> SparseVector:
    """The sparse query of a message without the words every impression starts with."""
    full = encode_query(text)
    drop = {token_id(t) for t in _PREFIX_TOKENS}
    kept = [i for i in full.indices if i not in drop]
    return SparseVector(indices=tuple(kept), values=(1.0,) * len(kept))


def reverie_id(tenant: str, episode_uid: str) -> str:
    """The point id of the reverie an episode left."""
    return stable_uid(tenant, episode_uid, "reverie")


def perturb(vector: np.ndarray, seed: str, noise: float = REVERIE_NOISE) -> list[float]:
    """The vector plus uniform noise in [-noise, noise] per coordinate, re-normalised
    (deterministic per seed, so re-running writes the same ghost)."""
    rng = np.random.default_rng(int(stable_uid(seed).replace("-", "")[:16], 16))
    out = np.asarray(vector, dtype=np.float64) + rng.uniform(-noise, noise, size=len(vector))
    norm = float(np.linalg.norm(out)) or 1.0
    return [float(x) for x in out / norm]


def impression_words(candidates: Sequence[str], most: int = IMPRESSION_WORDS) -> list[str]:
    """The first `most` candidates (entities, then topics, then the turn's longer words) that add
    a content word the earlier ones lack: "Antarctica" and the topic "antarctica" count once."""
    kept: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        tokens = set(tokenize(candidate))
        if not tokens or tokens <= seen:
            continue
        kept.append(candidate)
        seen |= tokens
        if len(kept) == most:
            break
    return kept


async def write_reverie(
    services: Services, episode: Episode, now: datetime, impress: Impress | None = None
) -> bool:
    """Leave the ghost of a faded episode in `reveries`: a blurred embedding, the ids of its
    neighbours, and a one-line vague impression: the template's subjects (its entities and
    topics, else a few words), or what `impress` (the model) makes of the turn and them. The
    template's subjects are always among the words it is recalled by."""
    tenant, uid = episode.tenant, episode.uid
    topics = await services.graph.topics.of_episode(tenant, uid)
    entities = [e.name for e in await services.graph.entities.of_episode(tenant, uid)]
    neighbours = [n.episode.uid for n in await services.graph.episodes.neighbours(tenant, uid, 1)]
    words = [w for w in re.findall(r"[^\W_]+", episode.user_text) if len(w) > 3]
    about = impression_words([*entities, *(t.replace("-", " ") for t in topics), *words])
    if not about:
        return False
    impression = IMPRESSION_PREFIX + ", ".join(about)
    if impress is not None:
        impression = await impress(episode.user_text, about)
    vector = (await services.embedder.embed_documents([episode.user_text or impression]))[0]
    point = _point(
        tenant, uid, vector, impression, neighbours, episode.created_at, now, extra=about
    )
    await services.vectors.upsert("reveries", [point])
    return True


def _point(
    tenant: str,
    uid: str,
    vector: np.ndarray,
    impression: str,
    neighbours: Sequence[str],
    created_at: datetime,
    faded_at: datetime,
    extra: Sequence[str] = (),
) -> VectorPoint:
    about = " ".join([impression.removeprefix(IMPRESSION_PREFIX), *extra])
    return VectorPoint(
        id=reverie_id(tenant, uid),
        dense=perturb(vector, reverie_id(tenant, uid)),
        sparse=encode_document(about),  # the words it is about, not the prefix
        payload={
            "tenant": tenant,
            "episode_uid": uid,
            "text": impression,
            "neighbours": list(neighbours),
            "created_at": as_utc(created_at).isoformat(),
            "faded_at": as_utc(faded_at).isoformat(),
            "archived": False,
        },
    )


async def list_reveries(services: Services, tenant: str) -> list[dict[str, Any]]:
    """Every reverie of the tenant (what the export holds), oldest memory first: the forgotten
    episode's uid, the impression, when the memory was made and when it faded, its neighbours."""
    rows = [
        {
            "episode_uid": str(h.payload.get("episode_uid", "")),
            "impression": str(h.payload.get("text", "")),
            "created_at": str(h.payload.get("created_at", "")),
            "faded_at": str(h.payload.get("faded_at", "")),
            "neighbours": [str(n) for n in h.payload.get("neighbours") or []],  # type: ignore[attr-defined]
        }
        for h in await services.vectors.scroll_points("reveries", tenant)
    ]
    return sorted(rows, key=lambda r: (r["created_at"], r["episode_uid"]))


async def restore_reverie(
    services: Services,
    tenant: str,
    episode_uid: str,
    impression: str,
    created_at: datetime,
    faded_at: datetime,
    neighbours: Sequence[str] = (),
) -> None:
    """Write a reverie back from its exported record (`Memory.import_`; idempotent). The
    forgotten turn's text is gone, so its blurred embedding is made from the impression."""
    vector = (await services.embedder.embed_documents([impression]))[0]
    point = _point(tenant, episode_uid, vector, impression, neighbours, created_at, faded_at)
    await services.vectors.upsert("reveries", [point])
