"""Health and consistency checks behind `mneme doctor`.

Checks settings, connectivity to each store, that the embedder loads and answers, schema version and the agreement of graph and
vectors: episodes without vectors, vectors without episodes, session summaries without
vectors, episodes stuck before `indexed`;
and the write path: turns waiting in the outbox (depth and age), records in its dead letter,
and quarantined episodes with their reasons; and sleep: whether the server's schedule runs it,
when each level last ran, and what deep sleep's last fidelity check found (as kept, not run
again). It reads across tenants (a maintenance view) and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memory.embeddings.embedders import EmbedderError
from memory.embeddings.install import check as check_embedder
from memory.schema import SCHEMA_VERSION, EpisodeStatus, as_utc, utcnow
from memory.services import Services
from memory.services.core import check_not_legacy
from memory.settings import ConfigError, Settings, load_settings
from memory.sleep.fidelity import last_check
from memory.sleep.levels import Level, last_runs
from memory.stores.base import SchemaMismatch, StoreError, StoreLocked
from memory.tenant import RULE, valid_ids
from memory.variables import unknown_variables
from memory.write.outbox import Outbox
from memory.write.quarantine import quarantined

STUCK_AFTER = timedelta(minutes=10)
"""An episode still `pending`/`stored` this long after it was written is reported as stuck."""


@dataclass(slots=True)
class Check:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str


@dataclass(slots=True)
class DoctorReport:
    """Every check that ran; `ok` when all passed."""

    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> None:
        """Record a check."""
        self.checks.append(Check(name, ok, detail))


async def run_doctor(settings: Settings | None = None) -> DoctorReport:
    """Run every check; never raises for a failing store, it reports it."""
    report = DoctorReport()
    try:
        settings = settings or load_settings()
    except ConfigError as exc:
        report.add("settings", False, str(exc))
        return report
    check_outbox(settings, report)
    misspelled = unknown_variables()
    report.add(
        "environment",
        not misspelled,
        "; ".join(misspelled) or "every MNEME_* variable set is a setting mneme reads",
    )
    report.add(
        "settings",
        True,
        f"data={settings.data_dir} graph={settings.resolved_graph_backend} "
        f"vectors={settings.resolved_qdrant_location} "
        f"embeddings={settings.embedding_model} llm={'configured' if settings.llm_configured else 'offline'}"
        + (f"; {settings.data_dir_note}" if settings.data_dir_note else ""),
    )
    try:
        services = await Services.open(settings, setup=False, preflight=False)
    except StoreLocked as exc:
        report.add("connectivity", *await _held(settings, exc))
        return report
    except (StoreError, OSError, RuntimeError, ValueError) as exc:
        report.add("connectivity", False, str(exc))
        return report
    try:
        report.add("connectivity", True, f"{services.graph.backend} and qdrant answer")
        await _check_embedder(services, report)
        await _check_schema(services, report)
        await _check_consistency(services, report)
        await _check_quarantine(services, report)
        await check_sleep(services, report)
        await check_fidelity_kept(services, report)
    finally:
        await services.close()
    return report


async def _check_embedder(services: Services, report: DoctorReport) -> None:
    """The embedder loads and answers (bookkeeping and every search need it)."""
    try:
        report.add("embedder", True, await check_embedder(services.embedder))
    except EmbedderError as exc:
        report.add("embedder", False, str(exc))


async def _held(settings: Settings, locked: StoreLocked) -> tuple[bool, str]:
    """(ok, detail) when another process holds the embedded stores: fine if it is the server
    at MNEME_SERVER_URL and that answers; the checks that need the stores are not run."""
    import httpx

    by = f"process {locked.holder}" if locked.holder else "another process"
    url = settings.server_url
    if not url:
        return False, (
            f"{locked}. If a server holds them, set MNEME_SERVER_URL (e.g. "
            f"http://127.0.0.1:2025) to check it instead"
        )
    try:
        async with httpx.AsyncClient(timeout=settings.connect_timeout_s) as http:
            answered = (await http.get(f"{url.rstrip('/')}/ok")).status_code == 200
    except httpx.HTTPError:
        answered = False
    if not answered:
        return False, (
            f"the embedded stores are held by {by}, and the server at MNEME_SERVER_URL={url} "
            f"does not answer /ok; stop the process holding them, or start that server"
        )
    return True, (
        f"the embedded stores are held by {by}; the server at {url} answers. Schema and "
        f"consistency checks need the stores: stop the server and re-run `mneme doctor`"
    )


async def _check_schema(services: Services, report: DoctorReport) -> None:
    version = await services.graph.schema_version()
    if version is None:
        report.add("schema", False, "graph schema not set up; run `mneme setup`")
    elif version != SCHEMA_VERSION:
        report.add(
            "schema",
            False,
            f"graph schema version {version}, this code expects {SCHEMA_VERSION}; "
            "upgrade mneme or migrate the store",
        )
    else:
        report.add("schema", True, f"graph schema version {version}")
    missing = await services.vectors.missing_collections()
    if missing:
        report.add("collections", False, f"missing {', '.join(missing)}; run `mneme setup`")
    else:
        report.add("collections", True, f"vectors under embedder {services.embedder.fingerprint}")
    status = await services.vectors.describe()
    mine = [c for c in status.collections if c.name.endswith(f"__{status.fingerprint}")]
    counts = ", ".join(
        f"{c.name.split('__', 1)[0]} {c.points}"
        + (f" ({c.indexed_vectors} indexed)" if c.indexed_vectors is not None else "")
        for c in mine
    )
    report.add(
        "vector index",
        True,
        f"{status.backend} at {status.location}: {counts or 'no collections'}"
        + (f"; {status.durability}" if status.durability else ""),
    )
    if status.cluster is not None:
        report.add("vector cluster", status.cluster_ok, status.cluster)
    try:
        check_not_legacy(services.settings)
    except SchemaMismatch as exc:
        report.add("vector files", False, str(exc))


async def _check_consistency(services: Services, report: DoctorReport) -> None:
    graph, vectors = services.graph, services.vectors
    indexed = {
        e.uid
        for e in await graph.episodes.list_by_status(
            None, [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED], limit=10_000_000
        )
        if not e.archived
    }
    all_uids = set(await graph.episodes.list_uids(None))
    tenants = await graph.episodes.list_tenants()
    reachable = valid_ids(tenants)
    unreachable = sorted(set(tenants) - set(reachable))
    report.add(
        "tenant ids",
        not unreachable,
        f"{len(tenants)} tenants"
        + (
            f"; {len(unreachable)} have ids that break the tenant rule (written before it, "
            f"{RULE}): no call can name them, so sweeps, sleep and reindex skip them"
            + _sample([repr(t) for t in unreachable])
            if unreachable
            else ""
        ),
    )
    with_vectors = await vectors.scroll_episode_uids("derivatives", None)
    without = sorted(indexed - with_vectors)
    orphans = sorted(with_vectors - all_uids)
    report.add(
        "episodes without vectors",
        not without,
        f"{len(without)} indexed episodes have no vectors"
        + _sample(without)
        + ("; run `mneme reindex`" if without else ""),
    )
    report.add(
        "vectors without episodes",
        not orphans,
        f"{len(orphans)} episode uids in vectors are not in the graph" + _sample(orphans),
    )
    summaries = {s.uid for tenant in reachable for s in await graph.summaries.list(tenant)}
    summary_points = await vectors.scroll_episode_uids("summaries", None)
    unindexed = sorted(summaries - summary_points)
    report.add(
        "session summaries",
        not unindexed,
        f"{len(summaries)} summaries, {len(unindexed)} without their vector"
        + _sample(unindexed)
        + ("; run `mneme reindex`" if unindexed else "")
        + (
            f"; {len(summary_points - summaries)} vectors of summaries not (yet) in the graph, "
            "rewritten by the next pass over their thread"
            if summary_points - summaries
            else ""
        ),
    )
    # A goal's status names its evidence episode by uid (no edge): forgetting resets it first.
    dangling = sorted(
        [
            g.uid
            for tenant in reachable
            for g in await graph.goals.list(tenant)
            if g.evidence_uid is not None and g.evidence_uid not in all_uids
        ]
    )
    report.add(
        "goal evidence",
        not dangling,
        f"{len(dangling)} goals rest on an episode that is gone"
        + _sample(dangling)
        + ("; run `mneme consolidate --level deep` to reassess them" if dangling else ""),
    )
    waiting = await graph.episodes.list_by_status(
        None, [EpisodeStatus.PENDING, EpisodeStatus.STORED], limit=10_000_000
    )
    cutoff = utcnow() - STUCK_AFTER
    held = {uid for _, uid in await quarantined(graph)}  # reported on their own line
    stuck = [e.uid for e in waiting if e.created_at < cutoff and e.uid not in held]
    report.add(
        "stuck episodes",
        not stuck,
        f"{len(waiting)} waiting for bookkeeping, {len(stuck)} for over "
        f"{int(STUCK_AFTER.total_seconds() // 60)} min"
        + _sample(stuck)
        + ("; run `mneme sweep`" if stuck else ""),
    )


def check_outbox(settings: Settings, report: DoctorReport) -> None:
    """Report the turns waiting in the outbox and the records in its dead letter."""
    state = Outbox(settings.resolved_outbox_dir).state()
    report.add(
        "dead letter",
        state.dead == 0,
        "no outbox record was refused by the graph store"
        if state.dead == 0
        else f"{state.dead} record(s) of {state.dead_tenants} user(s) were refused by the graph "
        "store and will NOT be filed on their own; `mneme outbox list` shows why, `mneme outbox "
        "replay --user U` files them again, `mneme outbox drop --user U` discards them",
    )
    if state.depth == 0 and not state.unreadable:
        report.add("outbox", True, "no turns waiting for the graph store")
        return
    age = ""
    if state.oldest_at is not None:
        minutes = max(0.0, utcnow().timestamp() - state.oldest_at) / 60
        age = f", the oldest {minutes:.0f} min old"
    report.add(
        "outbox",
        False,
        f"{state.depth} turns in {state.files} files wait for the graph store{age}"
        + (f"; {len(state.unreadable)} files unreadable" if state.unreadable else "")
        + "; they are filed when the store is back (`mneme sweep`, or any start)",
    )


async def _check_quarantine(services: Services, report: DoctorReport) -> None:
    found = await quarantined(services.graph)
    lines = [
        f"{tenant}/{uid}: {f.attempts} attempts, {f.error}" for (tenant, uid), f in found.items()
    ]
    report.add(
        "quarantined episodes",
        not found,
        f"{len(found)} episodes failed bookkeeping {services.settings.max_attempts} times"
        + (
            " (" + "; ".join(lines[:5]) + "); `mneme sweep --retry-quarantined` retries them"
            if lines
            else ""
        ),
    )


def _sample(uids: list[str]) -> str:
    return f" (e.g. {', '.join(uids[:3])})" if uids else ""


def _hours(seconds: float) -> str:
    return f"{seconds / 86400:g} d" if seconds >= 86400 else f"{seconds / 3600:g} h"


async def check_sleep(services: Services, report: DoctorReport) -> None:
    """Sleep: whether the server's schedule runs it (and at which cadence), and for each level
    its last run across users (the newest) and how many users it has not reached yet.
    Informational: a store that answers always passes."""
    settings = services.settings
    if settings.sleep_schedule:
        schedule = (
            f"the server's schedule runs it (micro every {_hours(settings.sleep_micro_s)}, "
            f"daily every {_hours(settings.sleep_daily_s)}, deep every "
            f"{_hours(settings.sleep_deep_s)})"
        )
    else:
        schedule = "the server's schedule is off (MNEME_SLEEP_SCHEDULE=false)"
    tenants = valid_ids(await services.graph.episodes.list_tenants())
    runs = [await last_runs(services, t) for t in tenants]
    levels = []
    for level in Level:
        times = []
        for r in runs:
            try:
                times.append(as_utc(datetime.fromisoformat(r[level.value])))
            except (KeyError, ValueError):
                pass
        last = max(times).isoformat(timespec="minutes") if times else "never"
        missing = len(tenants) - len(times)
        levels.append(
            f"{level.value} {last}"
            + (f" ({missing} of {len(tenants)} users never)" if missing else "")
        )
    report.add("sleep", True, f"{schedule}; last run: {', '.join(levels)}")


async def check_fidelity_kept(services: Services, report: DoctorReport) -> None:
    """Fidelity: what deep sleep's last check found for each user (`memory.sleep.fidelity`,
    read as kept, not run again): when the newest ran, the users whose account drifted from
    their words (how many records, by reason) or that none did, and how many users it has not
    checked yet. Informational: a drift is the person's to settle, not the store's health."""
    tenants = valid_ids(await services.graph.episodes.list_tenants())
    kept = {t: c for t in tenants if (c := await last_check(services, t)) is not None}
    if not kept:
        report.add("fidelity", True, "never checked (deep sleep checks it)")
        return
    newest = max(c.at for c in kept.values()).isoformat(timespec="minutes")
    drifted = [
        f"{t} {c.drifts} of {c.checked} records ("
        + ", ".join(f"{n} {reason}" for reason, n in sorted(c.drifted.items()))
        + f", checked {c.at.isoformat(timespec='minutes')})"
        for t, c in sorted(kept.items())
        if c.drifts
    ]
    if drifted:
        found = (
            f"drift in {len(drifted)} of {len(kept)} users' accounts: {'; '.join(drifted[:5])}"
            + (f"; {len(drifted) - 5} more" if len(drifted) > 5 else "")
            + "; `mneme fidelity --user ID` lists the records"
        )
    else:
        records = sum(c.checked for c in kept.values())
        found = f"no drift ({records} records of {len(kept)} users)"
    missing = len(tenants) - len(kept)
    report.add(
        "fidelity",
        True,
        f"last check {newest} (deep sleep): {found}"
        + (f" ({missing} of {len(tenants)} users never checked)" if missing else ""),
    )
