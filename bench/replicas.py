"""`mneme bench replicas`: several mneme replicas on one memory, one of them killed mid-stream.

`replicas` worker processes (`bench.replica_worker`: the agent graph, the bookkeeping queue with
its tenant lease, a sweep every few seconds, micro sleep now and then) share one graph store (the
Neo4j at NEO4J_URI, reached through the routing driver: `neo4j://`; or, without it, one SQLite
file), one Qdrant server (started here from the binary) and one data directory (so one outbox
directory, each replica writing its own files in it). `turns` turns of `tenants` tenants wait in
a queue the replicas take from, as a load balancer spreads requests. With `kill`, the first
replica's graph writes fail for a while (its turns go to its outbox: acknowledged, not yet in
the graph), then it is SIGKILLed mid-stream and not restarted; the turns it had taken but not
acknowledged go back to the queue (a client retrying elsewhere: same message id, same episode).

The audit: acknowledged turns lost (told remembered but not in the graph, or other text),
duplicates, episodes bookkept with effect by more than one run over the same content
(`double_bookkept`: two runs that both found the episode unfinished; with the tenant lease the
second finds it processed and does nothing; a run again after `attach_reply` changed the
episode is the design's re-run over the whole turn, counted apart as `rebookkept_after_reply`), overlapping consolidations of one tenant, the dead replica's outbox records filed by
the survivors before the audit touched anything, episodes left unprocessed, `mneme doctor`,
and the reply latency per turn (p50/p95) against the same run with one replica.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.qdrant_nodes import Nodes
from bench.replica_worker import message
from bench.write import percentiles
from memory.schema import EpisodeStatus

ROOT = Path(__file__).resolve().parents[1]


@dataclass(slots=True)
class ReplicaReport:
    """The audit of one replicas run (every figure of `mneme bench replicas`)."""

    replicas: int = 0
    graph: str = ""
    turns: int = 0
    tenants: int = 0
    acknowledged: int = 0
    via_outbox: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: int = 0
    bookkeeping_runs: int = 0
    double_bookkept: list[str] = field(default_factory=list)
    """Episodes bookkept with effect by more than one run over the same content."""
    rebookkept_after_reply: list[str] = field(default_factory=list)
    """Episodes bookkept again after their reply was attached (a sweep had bookkept the user's
    side while the reply was being written; `attach_reply` moved them back to `stored`)."""
    consolidations: int = 0
    consolidations_busy: int = 0
    consolidation_errors: int = 0
    """Consolidations that raised (a replica whose graph writes fail, say); not run, not counted."""
    consolidation_overlaps: int = 0
    killed: str | None = None
    dead_outbox_records: int = 0
    """Turns the killed replica acknowledged from its outbox (not yet in the graph)."""
    dead_outbox_filed_by_others: int = 0
    """Of those, the ones the surviving replicas filed into the graph before the audit."""
    retried_elsewhere: int = 0
    unprocessed: int = 0
    doctor_ok: bool = False
    doctor: list[str] = field(default_factory=list)
    reply_p50_ms: float = 0.0
    reply_p95_ms: float = 0.0
    turns_per_s: float = 0.0
    machine: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return {k: getattr(self, k) for k in self.__slots__}

    @property
    def ok(self) -> bool:
        """Nothing lost, doubled, bookkept twice, slept twice at once or left behind."""
        return (
            not self.lost
            and not self.duplicates
            and not self.double_bookkept
            and not self.consolidation_overlaps
            and self.dead_outbox_filed_by_others == self.dead_outbox_records
            and not self.unprocessed
            and self.doctor_ok
        )


def _env(work: Path, qdrant: Nodes, neo4j_uri: str | None, tenants: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MNEME_", "NEO4J_", "QDRANT_", "OPENAI_", "LANGSMITH_"))
    }
    env.update(
        MNEME_DATA_DIR=str(work / "data"),
        QDRANT_URL=qdrant.url,
        QDRANT_API_KEY=qdrant.api_key,
        MNEME_STORE_RETRY_S="1",
        MNEME_BOOKKEEPING_LEASE_S="10",
        MNEME_BENCH_TENANTS=str(tenants),
        LANGSMITH_TRACING="false",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    if "MNEME_QDRANT_BIN" in os.environ:
        env["MNEME_QDRANT_BIN"] = os.environ["MNEME_QDRANT_BIN"]
    if neo4j_uri:
        env.update(MNEME_GRAPH_BACKEND="neo4j", NEO4J_URI=neo4j_uri)
    else:
        env.update(MNEME_GRAPH_BACKEND="sqlite")
    return env


def _acks(work: Path) -> dict[str, list[tuple[str, int, str, str, float]]]:
    out: dict[str, list[tuple[str, int, str, str, float]]] = {}
    for path in work.glob("acks-*"):
        rows = []
        for line in path.read_text().splitlines():
            tenant, i, uid, outcome, ms = line.split()
            rows.append((tenant, int(i), uid, outcome, float(ms)))
        out[path.name.removeprefix("acks-")] = rows
    return out


def _lines(work: Path, prefix: str) -> list[list[str]]:
    return [
        line.split() for path in work.glob(f"{prefix}-*") for line in path.read_text().splitlines()
    ]


def drive(
    work: Path,
    *,
    replicas: int,
    turns: int,
    tenants: int,
    kill: bool,
    qdrant: Nodes,
    neo4j_uri: str | None,
    deadline_s: float,
) -> tuple[str | None, int]:
    """Run the replicas until every turn is acknowledged; (killed replica, turns retried)."""
    (work / "todo").mkdir(parents=True)
    (work / "faults").mkdir()
    for i in range(turns):
        (work / "todo" / f"c{i % tenants} {i}").touch()
    procs = _spawn(work, replicas, _env(work, qdrant, neo4j_uri, tenants))
    victim = "r0" if kill and replicas > 1 else None
    retried = 0
    fault_at, kill_at = turns // 4, turns // 2
    start = time.monotonic()
    try:
        while time.monotonic() - start < deadline_s:
            acks = _acks(work)
            total = sum(len(v) for v in acks.values())
            if total >= turns:
                break
            for name, proc in procs.items():
                if proc.poll() is not None and name != victim:
                    raise RuntimeError(f"replica {name} exited:\n{_tail(work / f'{name}.log')}")
            if victim and total >= fault_at and not (work / "faults" / f"graph-{victim}").exists():
                if procs[victim].poll() is None:
                    (work / "faults" / f"graph-{victim}").write_text("down")
            # Killed once its outbox holds an acknowledged turn (or late in the run regardless).
            pending = any(r[3] == "outbox" for r in acks.get(victim or "", []))
            ready = pending or total >= 3 * turns // 4
            if victim and total >= kill_at and ready and procs[victim].poll() is None:
                retried += _kill(work, procs[victim], victim, acks)
            time.sleep(0.2)
        else:
            raise TimeoutError(f"not every turn was acknowledged within {deadline_s:g} s")
        time.sleep(2 * 3.0)  # two sweeps of the survivors (bench.replica_worker.SWEEP_S)
        (work / "stop").touch()
        _wait_stopped(procs)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return victim, retried


def _spawn(work: Path, replicas: int, env: dict[str, str]) -> dict[str, subprocess.Popen[bytes]]:
    """Start the replica workers `r0`, `r1`, ..., each logging to `work/<name>.log`."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for r in range(replicas):
        name = f"r{r}"
        with (work / f"{name}.log").open("ab") as log:
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "bench.replica_worker", name, str(work)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    return procs


def _kill(
    work: Path,
    proc: subprocess.Popen[bytes],
    victim: str,
    acks: dict[str, list[tuple[str, int, str, str, float]]],
) -> int:
    """Kill the replica `victim` and put back the turns it had taken but not answered (the
    client retries them); how many were put back."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    retried = 0
    answered = {(t, i) for t, i, *_ in acks.get(victim, [])}
    for path in (work / "taken" / victim).glob("*"):
        tenant, number = path.name.rsplit(" ", 1)
        if (tenant, int(number)) not in answered:
            path.rename(work / "todo" / path.name)
            retried += 1
    (work / "faults" / f"graph-{victim}").unlink(missing_ok=True)
    return retried


def _wait_stopped(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    """Wait for the replicas told to stop; kill one that takes more than two minutes."""
    for proc in procs.values():
        if proc.poll() is None:
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


async def audit(
    work: Path, report: ReplicaReport, qdrant: Nodes, neo4j_uri: str | None
) -> ReplicaReport:
    """Count what the replicas left, before and after filing and sweeping what waits."""
    from pydantic import SecretStr

    from graph.bookkeeping import run_episode
    from memory.schema import Episode
    from memory.services import Services
    from memory.services.doctor import run_doctor
    from memory.settings import Settings
    from memory.write.episodes import sweep
    from memory.write.filing import drain_outbox

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=work / "data",
        graph_backend="neo4j" if neo4j_uri else "sqlite",
        neo4j_uri=neo4j_uri,
        qdrant_path=None,
        qdrant_url=qdrant.url,
        qdrant_api_key=SecretStr(qdrant.api_key),
        llm_base_url=None,
        embedding_base_url=None,
    )
    acks = _acks(work)
    rows = [row for name in sorted(acks) for row in acks[name]]
    report.acknowledged = sum(1 for *_, outcome, _ in rows if outcome in ("stored", "outbox"))
    report.via_outbox = sum(1 for *_, outcome, _ in rows if outcome == "outbox")
    dead = [r for r in acks.get(report.killed or "", []) if r[3] == "outbox"]
    report.dead_outbox_records = len(dead)
    services = await Services.open(settings, sweep_interval_s=None)
    try:
        # Before anything here files the outbox: what did the survivors file of the dead one's?
        for tenant, _, uid, _, _ in dead:
            report.dead_outbox_filed_by_others += (
                await services.graph.episodes.get(tenant, uid) is not None
            )

        async def process(episode: Episode) -> None:
            await run_episode(services, episode.tenant, episode.uid)

        await drain_outbox(services, submit=False)
        await sweep(services, process=process, retry_quarantined=True)
        episodes = await services.graph.episodes.list_by_status(
            None, list(EpisodeStatus), 10_000_000
        )
        by_uid = {e.uid: e for e in episodes}
        for tenant, i, uid, outcome, _ in rows:
            if outcome not in ("stored", "outbox"):
                continue
            got = by_uid.get(uid)
            if got is None or got.user_text != message(tenant, i) or not got.agent_text:
                report.lost.append(f"{tenant}#{i}")
        texts = [(e.tenant, e.user_text) for e in episodes]
        report.duplicates = len(texts) - len(set(texts))
        report.unprocessed = sum(e.status != EpisodeStatus.PROCESSED for e in episodes)
    finally:
        await services.close()
    runs = _lines(work, "bookkeeping")
    report.bookkeeping_runs = len(runs)
    report.double_bookkept, report.rebookkept_after_reply = bookkept_twice(runs)
    counts = consolidations(_lines(work, "consolidation"))
    report.consolidations, report.consolidations_busy = counts[0], counts[1]
    report.consolidation_errors, report.consolidation_overlaps = counts[2], counts[3]
    ms = [row[4] for row in rows]
    if ms:
        report.reply_p50_ms, report.reply_p95_ms = (round(x, 1) for x in percentiles(ms))
    doctor = await run_doctor(settings)
    report.doctor_ok = doctor.ok
    report.doctor = [f"{'ok' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in doctor.checks]
    return report


def bookkept_twice(runs: list[list[str]]) -> tuple[list[str], list[str]]:
    """From the workers' `bookkeeping-NAME` lines (uid, status when the run began, start, end,
    content hash then): the episodes that more than one run bookkept with effect over the same
    content (a race: the second should have found the episode processed), and those bookkept
    again over new content (`attach_reply` after a sweep had bookkept the user's side alone:
    the design's re-run over the whole turn, not a race)."""
    effective: dict[str, dict[str, int]] = {}
    for uid, before, _, _, content in runs:
        if before != EpisodeStatus.PROCESSED.value:
            by_content = effective.setdefault(uid, {})
            by_content[content] = by_content.get(content, 0) + 1
    twice = sorted(uid for uid, c in effective.items() if any(n > 1 for n in c.values()))
    again = sorted(uid for uid, c in effective.items() if len(c) > 1)
    return twice, again


def consolidations(lines: list[list[str]]) -> tuple[int, int, int, int]:
    """(runs, found busy, failed, overlapping runs of one tenant) from the workers'
    `consolidation-NAME` lines: `tenant start end`, `tenant busy` or `tenant error Type`."""
    spans: dict[str, list[tuple[float, float]]] = {}
    busy = errors = 0
    for row in lines:
        if row[1:] == ["busy"]:
            busy += 1
        elif len(row) == 3 and row[1] == "error":
            errors += 1
        else:
            spans.setdefault(row[0], []).append((float(row[1]), float(row[2])))
    overlaps = 0
    for runs in spans.values():
        runs.sort()
        overlaps += sum(
            1 for (_, end), (begin, _) in zip(runs, runs[1:], strict=False) if begin < end
        )
    return sum(len(r) for r in spans.values()), busy, errors, overlaps


def routing_uri(uri: str) -> str:
    """The Neo4j URI through the routing driver (`neo4j://`), as a cluster would need."""
    for plain, routed in (("bolt://", "neo4j://"), ("bolt+s://", "neo4j+s://")):
        if uri.startswith(plain):
            return routed + uri[len(plain) :]
    return uri


async def bench_replicas(
    *,
    replicas: int = 3,
    turns: int = 60,
    tenants: int = 6,
    kill: bool = True,
    neo4j_uri: str | None = None,
    work: Path | None = None,
) -> ReplicaReport:
    """The whole run: a Qdrant node, the replicas under faults, then the audit."""
    where = work or Path(tempfile.mkdtemp(prefix="mneme-replicas-"))
    uri = routing_uri(neo4j_uri) if neo4j_uri else None
    report = ReplicaReport(
        replicas=replicas,
        turns=turns,
        tenants=tenants,
        graph=f"neo4j at {uri}" if uri else "one SQLite file",
    )
    if uri:  # a fresh memory on the shared server
        from memory.stores.neo4j import Neo4jGraphStore

        store = Neo4jGraphStore(uri=uri, user="neo4j", password=None, database="neo4j")
        await store.setup()
        await store._wipe_for_tests()
        await store.close()
    qdrant = Nodes.create().start()
    started = time.monotonic()
    try:
        report.killed, report.retried_elsewhere = await asyncio.to_thread(
            drive,
            where,
            replicas=replicas,
            turns=turns,
            tenants=tenants,
            kill=kill,
            qdrant=qdrant,
            neo4j_uri=uri,
            deadline_s=300.0 + turns * 10.0,
        )
        report.turns_per_s = round(turns / (time.monotonic() - started), 2)
        report = await audit(where, report, qdrant, uri)
    finally:
        qdrant.stop()
        if work is None:
            shutil.rmtree(where, ignore_errors=True)
    one, five, _ = os.getloadavg()
    report.machine = f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f}"
    report.seconds = round(time.monotonic() - started, 1)
    return report
