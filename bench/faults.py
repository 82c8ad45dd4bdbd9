"""`mneme bench faults`: acknowledged turns under random faults, then an audit.

A child process (`bench.fault_child`) runs agent turns on the embedded stores while this one,
from a seeded schedule, SIGKILLs it at random moments (then restarts it at the first turn not
yet acknowledged, as a client retrying would) and takes the graph store and the vector store
down for random intervals. At the end the stores are opened here, the outbox drained and every
episode swept, and the audit counts: acknowledged turns lost (told "remembered" but not in the
graph, or with other text), duplicates, vectors without an episode, and `mneme doctor`.

With `hostile`, a second tenant attacks the first every tenth turn (`bench.fault_child.attack`:
a forged `command` into `remember`, an import claiming the victim's next uids, refused records
mid-stream in the outbox); the audit then also counts the victim's uids the hostile tenant
holds (`claimed`) and the dead letter by tenant, which must hold only the hostile tenant's
records (`mneme doctor` is then clean but for that).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.fault_child import HOSTILE, VICTIM, turn_text

ROOT = Path(__file__).resolve().parents[1]


@dataclass(slots=True)
class FaultReport:
    """The audit of one fault run."""

    turns: int = 0
    acknowledged: int = 0
    told_not_remembered: int = 0
    via_outbox: int = 0
    lost: list[int] = field(default_factory=list)
    duplicates: int = 0
    orphans: int = 0
    unindexed: int = 0
    kills: int = 0
    graph_outages: int = 0
    vector_outages: int = 0
    doctor_ok: bool = False
    doctor: list[str] = field(default_factory=list)
    seconds: float = 0.0
    hostile: bool = False
    claimed: list[str] = field(default_factory=list)
    """The victim's acknowledged uids the hostile tenant holds (must be none)."""
    dead_letters: dict[str, int] = field(default_factory=dict)
    """Records in the outbox's dead letter, by tenant (only the hostile tenant's may be)."""

    @property
    def failed(self) -> bool:
        """True when the audit found a loss, a duplicate, an orphan, a claim or an unwell doctor."""
        foreign = set(self.dead_letters) - ({HOSTILE} if self.hostile else set())
        return (
            bool(self.lost or self.duplicates or self.orphans or self.claimed or foreign)
            or not self.doctor_ok
        )

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return {k: getattr(self, k) for k in self.__slots__}


def child_env(data: Path) -> dict[str, str]:
    """The child's environment: embedded stores in `data`, offline, a short store breaker."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MNEME_", "NEO4J_", "QDRANT_", "OPENAI_"))
    }
    env.update(
        MNEME_DATA_DIR=str(data),
        MNEME_GRAPH_BACKEND="sqlite",
        MNEME_STORE_RETRY_S="1",
        LANGSMITH_TRACING="false",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    return env


def acknowledged(acks: Path) -> dict[int, tuple[str, str]]:
    """Turn -> (uid, outcome) for every turn whose reply came back."""
    out: dict[int, tuple[str, str]] = {}
    if acks.exists():
        for line in acks.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 3:
                out[int(parts[0])] = (parts[1], parts[2])
    return out


def _start(work: Path, first: int, last: int, hostile: bool) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "bench.fault_child"]
    args += [str(work / "data"), str(work / "acks"), str(work / "faults"), str(first), str(last)]
    args += ["hostile"] if hostile else []
    with (work / "child.log").open("ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            args,
            cwd=ROOT,
            env=child_env(work / "data"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def drive(
    work: Path, turns: int, kills: int, seed: int, deadline_s: float, hostile: bool = False
) -> FaultReport:
    """Run the child under the seeded fault schedule until every turn is acknowledged.

    The schedule is drawn up front: SIGKILLs after `kills` random numbers of acknowledged
    turns (each 0-0.8 s later, so they land inside a turn or its bookkeeping), and an outage
    of the graph store or the vector store (0.5-3 s) after about one turn in five.
    """
    rng = random.Random(seed)
    report = FaultReport(turns=turns, hostile=hostile)
    faults = work / "faults"
    faults.mkdir(parents=True, exist_ok=True)
    kill_at = sorted(rng.sample(range(1, turns), min(kills, max(0, turns - 1))))
    outages = sorted(
        (n, rng.choice(("graph", "graph", "vectors")), rng.uniform(0.5, 3.0))
        for n in rng.sample(range(turns), max(1, turns // 5))
    )
    down: dict[str, float] = {}
    start = time.monotonic()
    proc = _start(work, 0, turns, hostile)
    try:
        while time.monotonic() - start < deadline_s:
            done = acknowledged(work / "acks")
            if len(done) >= turns and (faults / "done").exists():
                break
            if proc.poll() is not None:  # finished its range or died: resume where it stopped
                (faults / "done").unlink(missing_ok=True)
                first = next((i for i in range(turns) if i not in done), turns)
                proc = _start(work, first, turns, hostile)
            if kill_at and len(done) >= kill_at[0]:
                kill_at.pop(0)
                time.sleep(rng.uniform(0.0, 0.8))
                _kill(proc)
                report.kills += 1
            while outages and len(done) >= outages[0][0]:
                _, store, seconds = outages.pop(0)
                (faults / store).write_text("down")
                down[store] = time.monotonic() + seconds
                if store == "graph":
                    report.graph_outages += 1
                else:
                    report.vector_outages += 1
            for store, until in list(down.items()):
                if time.monotonic() >= until:
                    (faults / store).unlink(missing_ok=True)
                    del down[store]
            time.sleep(0.05)
        for flag in ("graph", "vectors"):
            (faults / flag).unlink(missing_ok=True)
        time.sleep(3)  # let the last bookkeeping run with the stores up
    finally:
        _kill(proc)
    report.seconds = time.monotonic() - start
    return report


async def audit(work: Path, report: FaultReport, embedder: Any = None) -> FaultReport:
    """Open the stores here, file the outbox, sweep everything, then count what was lost."""
    from graph.bookkeeping import run_episode
    from memory.schema import Episode, EpisodeStatus
    from memory.services import Services
    from memory.services.doctor import run_doctor
    from memory.settings import Settings
    from memory.write.deadletter import DeadLetter
    from memory.write.episodes import sweep
    from memory.write.filing import drain_outbox

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=work / "data",
        graph_backend="sqlite",
        neo4j_uri=None,
        qdrant_url=None,
        qdrant_path=None,
    )
    services = await Services.open(
        settings, embedder=embedder, pipeline=run_episode, sweep_interval_s=None
    )
    try:

        async def process(episode: Episode) -> None:
            await run_episode(services, episode.tenant, episode.uid)

        await drain_outbox(services, submit=False)
        await sweep(services, process=process, retry_quarantined=True)
        acks = acknowledged(work / "acks")
        report.acknowledged = sum(1 for _, o in acks.values() if o in ("stored", "outbox"))
        report.told_not_remembered = sum(1 for _, o in acks.values() if o == "not_remembered")
        report.via_outbox = sum(1 for _, o in acks.values() if o == "outbox")
        episodes = await services.graph.episodes.list_by_status(
            VICTIM, list(EpisodeStatus), 10_000_000
        )
        by_uid = {e.uid: e for e in episodes}
        for i, (uid, outcome) in sorted(acks.items()):
            if outcome not in ("stored", "outbox"):
                continue
            got = by_uid.get(uid)
            if got is None or got.user_text != turn_text(i) or not got.agent_text:
                report.lost.append(i)
        texts = [e.user_text for e in episodes]
        report.duplicates = len(texts) - len(set(texts))
        report.unindexed = sum(e.status != EpisodeStatus.PROCESSED for e in episodes)
        with_vectors = await services.vectors.scroll_episode_uids("derivatives", None)
        theirs = await services.graph.episodes.list_by_status(
            HOSTILE, list(EpisodeStatus), 10_000_000
        )
        victims = {uid for uid, _ in acks.values()}
        report.claimed = sorted(e.uid for e in theirs if e.uid in victims)
        report.orphans = len(with_vectors - set(by_uid) - {e.uid for e in theirs})
        for letter in DeadLetter.of(settings.resolved_outbox_dir).letters():
            report.dead_letters[letter.tenant] = report.dead_letters.get(letter.tenant, 0) + 1
    finally:
        await services.close()
    doctor = await run_doctor(settings)
    hostile_only = set(report.dead_letters) <= {HOSTILE}  # the attack's refused records
    report.doctor_ok = all(
        c.ok or (report.hostile and c.name == "dead letter" and hostile_only) for c in doctor.checks
    )
    report.doctor = [f"{'ok' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in doctor.checks]
    return report


async def bench_faults(
    turns: int, kills: int, seed: int, work: Path, hostile: bool = True
) -> FaultReport:
    """The whole fault run: drive the child (with the hostile tenant), then audit."""
    import asyncio

    deadline = 120.0 + turns * 3.0
    report = await asyncio.to_thread(drive, work, turns, kills, seed, deadline, hostile)
    return await audit(work, report)
