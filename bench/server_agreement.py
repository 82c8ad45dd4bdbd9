"""Does retrieval on a Qdrant server rank as on the embedded default? Question by question.

Runs `mneme eval retrieval`'s protocol (`bench.eval_retrieval.run_eval`) on the same data twice,
on the embedded default (Qdrant Edge) and with `QDRANT_URL` (each conversation a tenant of the
server), records every vector search of both runs with its hits (and, for a fused dense +
sparse search, each leg alone), then compares each question's top 10 and explains each
difference: a fused search whose legs are the same on both backends but hold an exact tie
(the `VectorIndex.search` contract's stated exception: each engine ranks a leg's ties in its
own order before fusing), or anything else (reported in full).

    python -m bench.server_agreement FILE.jsonl [--limit-conversations N] [--json OUT]

With QDRANT_URL (+ QDRANT_API_KEY, QDRANT_PREFER_GRPC) set it uses that server (the tenants
`memeval-<n>` are overwritten); else it starts a throw-away node from the binary
(`bench.qdrant_nodes`). Prints the machine's CPUs and load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memory.stores.base import SearchRequest, VectorHit
from memory.stores.vectors import SCORE_TOLERANCE, VectorIndex

SearchMany = Callable[[Any, str, Sequence[SearchRequest]], Awaitable[list[list[VectorHit]]]]
"""`search_many` of an index class, called with the index as its first argument."""
_QUESTION: contextvars.ContextVar[int] = contextvars.ContextVar("question", default=-1)


@dataclass(slots=True)
class Search:
    """One recorded search: the request, its hits, each leg of a fused one, the question."""

    request: SearchRequest
    hits: list[VectorHit]
    legs: list[list[VectorHit]]
    question: int


@dataclass(slots=True)
class Recording:
    """Every search of each backend, in order."""

    by_backend: dict[str, list[Search]] = field(default_factory=dict)


@contextmanager
def recording() -> Iterator[Recording]:
    """Record every `search_many` of the Qdrant Edge and qdrant-client indexes in the block, and
    count questions through `bench.eval_retrieval.retrieve`."""
    import bench.eval_retrieval as harness
    from memory.stores.qdrant import QdrantIndex
    from memory.stores.qdrant_edge import EdgeIndex

    rec = Recording()
    real = {cls: cls.search_many for cls in (EdgeIndex, QdrantIndex)}
    # The harness's own name for `retrieve` is rebound (it is not part of its interface).
    names = vars(harness)
    real_retrieve = names["retrieve"]
    asked = [0]

    async def search_many(
        self: VectorIndex, tenant: str, requests: Sequence[SearchRequest]
    ) -> list[list[VectorHit]]:
        run: SearchMany = real[type(self)]  # type: ignore[index]
        out = await run(self, tenant, requests)
        for request, hits in zip(requests, out, strict=True):
            legs: list[list[VectorHit]] = []
            if request.dense is not None and request.sparse is not None and request.sparse.indices:
                wide = 2 * request.limit  # what the engine fuses (`qdrant_query.OVERFETCH`)
                dense = replace(request, sparse=None, limit=wide)
                sparse = replace(request, dense=None, score_threshold=None, limit=wide)
                legs = await run(self, tenant, [dense, sparse])
            rec.by_backend.setdefault(self.backend, []).append(
                Search(request, hits, legs, _QUESTION.get())
            )
        return out

    async def retrieve(*args: Any, **kwargs: Any) -> Any:
        token = _QUESTION.set(asked[0])
        asked[0] += 1
        try:
            return await real_retrieve(*args, **kwargs)
        finally:
            _QUESTION.reset(token)

    try:
        for cls in real:
            cls.search_many = search_many  # type: ignore[method-assign]
        names["retrieve"] = retrieve
        yield rec
    finally:
        for cls, method in real.items():
            cls.search_many = method  # type: ignore[method-assign]
        names["retrieve"] = real_retrieve


def has_ties(hits: Sequence[VectorHit]) -> bool:
    """True when two hits score exactly the same (identical texts: identical vectors)."""
    scores = [h.score for h in hits]
    return len(set(scores)) < len(scores)


def same_hits(a: Sequence[VectorHit], b: Sequence[VectorHit]) -> bool:
    """Same ids in the same order, scores within `SCORE_TOLERANCE`."""
    return [h.id for h in a] == [h.id for h in b] and all(
        abs(x.score - y.score) <= SCORE_TOLERANCE for x, y in zip(a, b, strict=True)
    )


def explain(want: Search, got: Search) -> str | None:
    """None when two recordings of one search agree (scores within tolerance, except a fused
    search over tied legs, whose fused scores may move); "tie" when the order differs only as
    the contract allows: among hits whose scores agree within `SCORE_TOLERANCE` (a tie group,
    or one cut at the limit), or in a fused search whose legs agree and hold an exact tie;
    else what differs, with the first hits of both."""
    if [h.id for h in got.hits] == [h.id for h in want.hits]:
        if same_hits(got.hits, want.hits) or any(has_ties(leg) for leg in want.legs):
            return None
        return "same ids, scores beyond tolerance"
    if len(got.hits) == len(want.hits) and all(
        abs(g.score - w.score) <= SCORE_TOLERANCE for g, w in zip(got.hits, want.hits, strict=True)
    ):
        return "tie"  # position by position the same scores: only tied hits changed places
    if not want.legs:
        return f"{want.request.kind}: not a fused search, ids differ: {_sample(want, got)}"
    if not all(same_hits(g, w) for g, w in zip(got.legs, want.legs, strict=True)):
        return f"{want.request.kind}: a leg differs: {_sample(want, got)}"
    if not any(has_ties(leg) for leg in want.legs):
        return f"{want.request.kind}: fused order differs without a tie in its legs"
    return "tie"


def _sample(want: Search, got: Search, n: int = 4) -> str:
    first = next(
        (i for i, (a, b) in enumerate(zip(want.hits, got.hits, strict=False)) if a.id != b.id),
        min(len(want.hits), len(got.hits)),
    )

    def show(hits: Sequence[VectorHit]) -> list[tuple[str, float]]:
        return [(h.id[:8], round(h.score, 6)) for h in hits[first : first + n]]

    r = want.request
    what = "dense" if r.dense is not None else ""
    what += "+sparse" if r.sparse is not None and r.sparse.indices else ""
    return (
        f"{what} limit {r.limit} threshold {r.score_threshold} from #{first}: "
        f"embedded {show(want.hits)} ({len(want.hits)} hits), "
        f"server {show(got.hits)} ({len(got.hits)} hits)"
    )


def compare(
    reference: list[Search], other: list[Search], questions: list[tuple[str, list[str], list[str]]]
) -> dict[str, Any]:
    """Question by question: identical top 10, different by a tie only, or different otherwise
    (with the reasons); and search by search."""
    if len(reference) != len(other):
        raise ValueError(f"the runs made {len(reference)} and {len(other)} searches")
    reasons: dict[int, list[str]] = {}
    fused = swapped = 0
    for want, got in zip(reference, other, strict=True):
        fused += bool(want.legs)
        why = explain(want, got)
        if why is not None:
            swapped += why == "tie"
            reasons.setdefault(want.question, []).append(why)
    out: dict[str, Any] = {
        "questions": len(questions),
        "identical_top10": 0,
        "different_by_ties_only": [],
        "different_otherwise": [],
        "searches": len(reference),
        "fused_searches": fused,
        "fused_reordered_by_ties": swapped,
        "searches_differing_otherwise": sum(1 for rs in reasons.values() for r in rs if r != "tie"),
        # Every such search with its question, also when the question's top 10 came out the
        # same (a search whose hits never reach the ranking, or differ below the top 10).
        "search_differences": [
            {"id": questions[i][0] if 0 <= i < len(questions) else str(i), "reason": r}
            for i, rs in sorted(reasons.items())
            for r in rs
            if r != "tie"
        ],
    }
    for i, (qid, mine, theirs) in enumerate(questions):
        if mine[:10] == theirs[:10]:
            out["identical_top10"] += 1
        elif reasons.get(i) and all(r == "tie" for r in reasons[i]):
            out["different_by_ties_only"].append(qid)
        else:
            out["different_otherwise"].append({"id": qid, "reasons": reasons.get(i, ["none"])})
    return out


async def run(data: Path, limit: int | None, server: dict[str, object]) -> dict[str, Any]:
    """Both evals on `data` with the recording on; the comparison."""
    from bench.eval_retrieval import run_eval
    from memory.embeddings.embedders import build_embedder
    from memory.settings import Settings

    base = Settings(_env_file=None)  # type: ignore[call-arg]
    embedder = build_embedder(base)
    try:
        with tempfile.TemporaryDirectory(prefix="mneme-agreement-") as tmp:
            embedded_settings = base.model_copy(
                update={"data_dir": Path(tmp) / "edge", "qdrant_url": None, "qdrant_path": None}
            )
            server_settings = base.model_copy(
                update={"data_dir": Path(tmp) / "server", "qdrant_path": None, **server}
            )
            with recording() as rec:
                embedded = await run_eval(
                    data,
                    settings=embedded_settings,
                    embedder=embedder,
                    limit_conversations=limit,
                )
                on_server = await run_eval(
                    data, settings=server_settings, embedder=embedder, limit_conversations=limit
                )
    finally:
        await embedder.close()
    theirs = {q["id"]: q["ranked"] for q in on_server.questions}
    questions = [(q["id"], q["ranked"], theirs[q["id"]]) for q in embedded.questions]
    edge_searches = rec.by_backend.get("qdrant-edge", [])
    server_searches = rec.by_backend.get("qdrant", [])
    offset = len(embedded.questions)  # the server run's questions are counted after these
    server_searches = [replace(s, question=s.question - offset) for s in server_searches]
    report = compare(edge_searches, server_searches, questions)
    one, five, _ = os.getloadavg()
    report["machine"] = {
        "cpus": os.cpu_count(),
        "load_1m": round(one, 2),
        "load_5m": round(five, 2),
    }
    report["vectors"] = on_server.summary.get("vectors")
    report["metrics"] = {
        "embedded": embedded.summary["metrics"].get("overall_no_adversarial"),
        "server": on_server.summary["metrics"].get("overall_no_adversarial"),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    from pydantic import SecretStr

    parser = argparse.ArgumentParser(prog="server_agreement", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    nodes = None
    if os.environ.get("QDRANT_URL"):
        from memory.settings import load_settings

        s = load_settings()
        server: dict[str, object] = {
            "qdrant_url": s.qdrant_url,
            "qdrant_api_key": s.qdrant_api_key,
            "qdrant_prefer_grpc": s.qdrant_prefer_grpc,
            "qdrant_grpc_port": s.qdrant_grpc_port,
        }
    else:
        from bench.qdrant_nodes import Nodes

        nodes = Nodes.create().start()
        server = {"qdrant_url": nodes.url, "qdrant_api_key": SecretStr(nodes.api_key)}
    try:
        report = asyncio.run(run(args.data, args.limit_conversations, server))
    finally:
        if nodes is not None:
            nodes.stop()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0 if not report["different_otherwise"] else 1


if __name__ == "__main__":
    sys.exit(main())
