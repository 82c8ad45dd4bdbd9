"""The dense head's place: a turn that answers in other words than the question's is not ranked
below every turn that shares a word with it (issue 31; docs/adr/0156-dense-head-place.md).

The fusion (`memory.retrieval.fusion`) adds a cosine similarity, which spreads over a narrow
band (about 0.2-0.5 with MiniLM), to a BM25 score divided by the list's best, which spans 0-1,
and a turn the lexical list did not return takes that list's lowest value. So a turn that
shares none of the question's words ranks below the turns that share one, however much closer
in meaning it is: "Guess who's a certified sailor?" for "Did I ever get that sailing
certificate?" is the dense list's 2nd and the pipeline's 12th, behind the other turns that say
"sailing". That the lexical list did not return a turn says only that it shares no word with
the question, which a paraphrase never does: no evidence against it. Only the dense list judged
it, so the dense list's order speaks for it, next to the lexical list's own best:

- the **dense head**: the `Rerank.dense_head` episodes the passes' dense lists rank first (each
  episode at its best cosine over the passes);
- those of them that **no lexical hit found** (no sparse point of theirs was among the points
  any pass read: in a memory small enough for the search to read every match, one that shares
  none of the question's words);
- each takes the place **right after the lexical list's best** episode's first candidate (the
  episode with the best sparse score, through its own candidate or a fact that stands for
  it), in dense order, when it ranks lower: its first candidate (its own, or a fact of it)
  moves, with a score between its new neighbours' and its sides scaled alike; the candidates it
  passes move one place down and nothing leaves the list. One already at or above its place
  stays where it is.

A turn the lexical list found keeps the place the fusion gave it: there the two lists have both
spoken. So does a turn the facts demoted (`memory.retrieval.facts`: it stated only superseded
facts, or facts about someone other than whom the question is about): the knowledge layer knows
why it ranks low, and the dense list, which matches "I live in Utrecht" to "Where do I live
now?" as well as "We moved to Rotterdam", does not. Without a lexical hit, or when the lexical
best is not among the candidates, nothing moves.

Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from memory.retrieval.accumulate import Found
from memory.retrieval.candidates import Candidate

__all__ = ["dense_head", "with_dense_head"]


def dense_head(
    passes: Iterable[Mapping[str, Found]], depth: int, demoted: Collection[str] = ()
) -> tuple[list[str], str | None]:
    """The `depth` episodes the passes' dense lists rank first that no lexical hit found and
    the facts did not demote (`demoted`; best cosine first, ties by uid), and the episode with
    the best sparse score (None: none)."""
    dense: dict[str, float] = {}
    sparse: dict[str, float] = {}
    for found in passes:
        for uid, ep in found.items():
            if ep.dense is not None and ep.dense > dense.get(uid, -float("inf")):
                dense[uid] = ep.dense
            if ep.sparse is not None and ep.sparse > sparse.get(uid, -float("inf")):
                sparse[uid] = ep.sparse
    head = sorted(dense, key=lambda u: (-dense[u], u))[: max(0, depth)]
    best = min(sparse, key=lambda u: (-sparse[u], u)) if sparse else None
    return [u for u in head if u not in sparse and u not in demoted], best


def with_dense_head(
    candidates: Sequence[Candidate], unmatched: Sequence[str], lexical_best: str | None
) -> list[Candidate]:
    """The candidates (best first) with each of the `unmatched` episodes' first candidate
    placed right after `lexical_best`'s (then the next one after it), when it ranks lower; its
    score set between its new neighbours', its sides scaled alike."""
    out = list(candidates)
    if not unmatched or lexical_best is None:
        return out
    anchor = _first_holding(out, lexical_best)
    if anchor is None:
        return out
    place = anchor + 1
    for uid in unmatched:
        at = _first_holding(out, uid)
        if at is None:
            continue
        if at <= place:  # already at or above its place; the next one goes after it
            place = max(place, at + 1)
            continue
        moved = out.pop(at)
        above = out[place - 1].score
        below = out[place].score
        _rescore(moved, (above + below) / 2.0 if above > below else above)
        out.insert(place, moved)
        place += 1
    return out


def _first_holding(candidates: Sequence[Candidate], uid: str) -> int | None:
    """Position of the first candidate that stands for episode `uid` (itself, or a fact it
    states)."""
    return next((i for i, c in enumerate(candidates) if uid in c.sources), None)


def _rescore(candidate: Candidate, score: float) -> None:
    factor = score / candidate.score if candidate.score > 0 else 1.0
    candidate.score = score
    candidate.sides = {side: value * factor for side, value in candidate.sides.items()}
