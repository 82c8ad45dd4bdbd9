"""Throw-away Qdrant servers for tests and benchmarks: one node, or a cluster on loopback ports.

The project's runner for a real Qdrant server, as `tools/neo4j` is for Neo4j (and what
`tools/qdrant/qdrant.sh` calls). Every node gets free ports (HTTP, gRPC and, in a cluster, the
peer-to-peer port), its own storage directory under a run directory (a temp dir by default), an
API key, and runs in its own session so that it outlives the process that started it. The run
directory's `nodes.json` records what was started, so `stop` (another process, later) finds the
processes by pid, checks they are ours and deletes the storage.

The binary: `MNEME_QDRANT_BIN`, else `../shared/bin/qdrant` beside the repository (how the
project's machines ship it: Qdrant v1.18.3 built from source, `../shared/bin/README.md`). Users
run the official image instead; the API is the same.

    python -m bench.qdrant_nodes start [--cluster N] [--run-dir DIR] [--dev]
    python -m bench.qdrant_nodes stop --run-dir DIR
    python -m bench.qdrant_nodes status --run-dir DIR

`start` prints `export QDRANT_TEST_URL=... QDRANT_TEST_API_KEY=... QDRANT_TEST_GRPC_PORT=...`
(and `QDRANT_TEST_CLUSTER=url,url,...` for a cluster) on stdout, or with `--dev` the settings
mneme itself reads (`QDRANT_URL`, `QDRANT_API_KEY`, `QDRANT_GRPC_PORT`). Exit codes: 0 ok, 1
failure, 3 no binary (callers may then say loudly that the server was not tested).

Nothing here imports mneme: tests, benchmarks and the shell runner share it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = "nodes.json"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0

NEEDED = (
    "these tests need a Qdrant server: the binary at ../shared/bin/qdrant beside the repository "
    "(or MNEME_QDRANT_BIN=/path/to/qdrant), or QDRANT_TEST_URL=http://host:6333 (with "
    "QDRANT_TEST_API_KEY if it needs a key, QDRANT_TEST_GRPC_PORT if gRPC is not on 6334) "
    "pointing at a throw-away server whose collections the tests may delete, e.g. "
    "`docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant:v1.18.3`"
)
"""What the tests that need a real server say when there is none."""


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Nodes this process started, by pid: kept so that they are reaped (and never reported by
`Popen.__del__` as still running) when this process stops them."""


class NodeError(RuntimeError):
    """A node could not be started or stopped (the message says why, with its log's tail)."""


def binary() -> Path | None:
    """The Qdrant server binary: MNEME_QDRANT_BIN, else ../shared/bin/qdrant; None if neither."""
    configured = os.environ.get("MNEME_QDRANT_BIN")
    candidates = [Path(configured)] if configured else [ROOT.parent / "shared" / "bin" / "qdrant"]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    return None


def free_port() -> int:
    """A TCP port nothing listens on right now (never 2024, which is taken on these machines)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port != 2024:
            return port


@dataclass
class Node:
    """One Qdrant process: its ports, storage, log and (while it runs) pid."""

    name: str
    http_port: int
    grpc_port: int
    storage: str
    log: str
    p2p_port: int | None = None
    pid: int | None = None
    started: str | None = None
    """The process's start time (/proc/<pid>/stat), so that a recycled pid is never taken for it."""

    @property
    def url(self) -> str:
        """The node's HTTP API."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def p2p_uri(self) -> str:
        """The node's peer-to-peer address in a cluster."""
        return f"http://127.0.0.1:{self.p2p_port}"

    def alive(self) -> bool:
        """True while our process lives (this pid, started when we started it, not a zombie)."""
        stat = _stat(self.pid)
        return stat is not None and stat[0] != "Z" and stat[1] == self.started


def _stat(pid: int | None) -> tuple[str, str] | None:
    """(state, start time in clock ticks) of a process, or None when there is no such process."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]


@dataclass
class Nodes:
    """The nodes of one run directory (a single node or a cluster), with their shared API key."""

    run_dir: str
    api_key: str
    binary: str
    nodes: list[Node] = field(default_factory=list)
    cluster: bool = False

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(
        cls,
        run_dir: Path | None = None,
        *,
        size: int = 1,
        cluster: bool = False,
        api_key: str | None = None,
        qdrant: Path | None = None,
    ) -> Nodes:
        """Describe `size` nodes (ports chosen now, nothing started) in `run_dir` (a new temp dir
        by default); `cluster` makes them peers (one node may be a cluster of one)."""
        exe = qdrant or binary()
        if exe is None:
            raise FileNotFoundError(NEEDED)
        where = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="mneme-qdrant-"))
        where.mkdir(parents=True, exist_ok=True)
        nodes = cls(
            str(where),
            api_key or secrets.token_hex(16),
            str(exe),
            cluster=cluster or size > 1,
        )
        for i in range(size):
            name = f"node{i}"
            nodes.nodes.append(
                Node(
                    name,
                    free_port(),
                    free_port(),
                    str(where / name / "storage"),
                    str(where / name / "qdrant.log"),
                    free_port() if nodes.cluster else None,
                )
            )
        return nodes

    @classmethod
    def load(cls, run_dir: Path) -> Nodes | None:
        """The nodes recorded in `run_dir`, or None when nothing was started there."""
        try:
            raw = json.loads((Path(run_dir) / STATE).read_text())
        except (OSError, ValueError):
            return None
        raw["nodes"] = [Node(**n) for n in raw["nodes"]]
        return cls(**raw)

    def save(self) -> None:
        """Record the nodes (ports, pids) in the run directory."""
        path = Path(self.run_dir) / STATE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)

    def start(self, timeout_s: float = START_TIMEOUT_S) -> Nodes:
        """Start every node (the first one first in a cluster) and wait until each is ready."""
        for node in self.nodes:
            self.start_node(node, wait=False)
            if self.cluster and node is self.nodes[0]:
                self.wait_ready(node, timeout_s)
        for node in self.nodes:
            self.wait_ready(node, timeout_s)
        if self.cluster:
            self.wait_peers(len(self.nodes), timeout_s)
        return self

    def start_node(
        self, node: Node, *, wait: bool = True, timeout_s: float = START_TIMEOUT_S
    ) -> None:
        """Start (or restart, on its storage) one node."""
        if node.alive():
            return
        Path(node.storage).mkdir(parents=True, exist_ok=True)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("QDRANT__")},
            "QDRANT__STORAGE__STORAGE_PATH": node.storage,
            "QDRANT__STORAGE__SNAPSHOTS_PATH": str(Path(node.storage).parent / "snapshots"),
            "QDRANT__SERVICE__HOST": "127.0.0.1",
            "QDRANT__SERVICE__HTTP_PORT": str(node.http_port),
            "QDRANT__SERVICE__GRPC_PORT": str(node.grpc_port),
            "QDRANT__SERVICE__API_KEY": self.api_key,
            "QDRANT__TELEMETRY_DISABLED": "true",
            "QDRANT__LOG_LEVEL": os.environ.get("MNEME_QDRANT_LOG_LEVEL", "WARN"),
        }
        args = [self.binary]
        if self.cluster:
            env["QDRANT__CLUSTER__ENABLED"] = "true"
            env["QDRANT__CLUSTER__P2P__PORT"] = str(node.p2p_port)
            first = self.nodes[0]
            if node is not first:
                args += ["--bootstrap", first.p2p_uri]
            args += ["--uri", node.p2p_uri]
        with open(node.log, "ab") as log:
            proc = subprocess.Popen(
                args,
                cwd=Path(node.storage).parent,  # it writes ./snapshots and ./static lookups here
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        node.pid = proc.pid
        _CHILDREN[proc.pid] = proc
        stat = _stat(proc.pid)
        node.started = stat[1] if stat else None
        self.save()
        if wait:
            self.wait_ready(node, timeout_s)

    def wait_ready(self, node: Node, timeout_s: float = START_TIMEOUT_S) -> None:
        """Poll the node's /readyz until it answers 200; `NodeError` with its log if it does not."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not node.alive():
                raise NodeError(f"qdrant {node.name} exited during start-up\n{tail(node.log)}")
            if self._get(node, "/readyz", auth=False) is not None:
                return
            time.sleep(0.1)
        raise NodeError(f"qdrant {node.name} not ready after {timeout_s:g} s\n{tail(node.log)}")

    def wait_peers(self, count: int, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until the first live node's cluster view lists `count` peers and a raft leader."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            info = self.cluster_info() or {}
            peers, raft = info.get("peers"), info.get("raft_info")
            leader = raft.get("leader") if isinstance(raft, dict) else None
            if isinstance(peers, dict) and len(peers) >= count and leader is not None:
                return
            time.sleep(0.2)
        raise NodeError(f"the cluster did not reach {count} peers in {timeout_s:g} s")

    def kill(self, node: Node, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to one node (SIGKILL: no flush, no goodbye) and wait for it to exit."""
        if node.pid is None or not node.alive():
            return
        os.kill(node.pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while node.alive() and time.monotonic() < deadline:
            _reap(node.pid)
            time.sleep(0.05)
        if node.alive():
            os.kill(node.pid, signal.SIGKILL)
            while node.alive():
                _reap(node.pid)
                time.sleep(0.05)
        _reap(node.pid)

    def stop(self, *, keep: bool = False) -> None:
        """Stop every node (TERM, then KILL) and delete the run directory unless `keep`."""
        for node in self.nodes:
            self.kill(node, signal.SIGTERM)
            node.pid = None
        if keep:
            self.save()
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # ------------------------------------------------------------------ queries

    @property
    def url(self) -> str:
        """The first node's HTTP API (any node of a cluster answers any request)."""
        return self.nodes[0].url

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP API, in order."""
        return [n.url for n in self.nodes]

    def cluster_info(self) -> dict[str, object] | None:
        """`GET /cluster` of the first live node (None when none answers)."""
        for node in self.nodes:
            if node.alive():
                got = self._get(node, "/cluster")
                if got is not None:
                    result = got.get("result")
                    return result if isinstance(result, dict) else None
        return None

    def _get(self, node: Node, path: str, *, auth: bool = True) -> dict[str, object] | None:
        request = urllib.request.Request(node.url + path)
        if auth:
            request.add_header("api-key", self.api_key)
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                body = response.read()
        except (OSError, urllib.error.URLError):
            return None
        try:
            value = json.loads(body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def exports(self, *, dev: bool = False) -> list[str]:
        """Shell lines that point the tests (or, with `dev`, mneme itself) at these nodes."""
        first = self.nodes[0]
        if dev:
            lines = [
                f"export QDRANT_URL={','.join(self.urls) if self.cluster else first.url}",
                f"export QDRANT_API_KEY={self.api_key}",
            ]
            return lines
        lines = [
            f"export QDRANT_TEST_URL={first.url}",
            f"export QDRANT_TEST_API_KEY={self.api_key}",
            f"export QDRANT_TEST_GRPC_PORT={first.grpc_port}",
        ]
        if self.cluster:
            lines.append(f"export QDRANT_TEST_CLUSTER={','.join(self.urls)}")
        return lines


def _reap(pid: int) -> None:
    """Collect our own child's exit status (a no-op for a process another one started)."""
    proc = _CHILDREN.get(pid)
    if proc is not None:
        if proc.poll() is not None:
            del _CHILDREN[pid]
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def tail(log: str, lines: int = 30) -> str:
    """The last lines of a node's log, indented."""
    try:
        text = Path(log).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "  (no log)"
    return "\n".join("  | " + line for line in text)


# --------------------------------------------------------------------------- command line


def _default_run_dir() -> Path:
    return Path(
        os.environ.get("MNEME_QDRANT_RUN_DIR") or Path(tempfile.gettempdir()) / "mneme-qdrant"
    )


def say(text: str) -> None:
    """A message of the runner, on stderr (stdout carries only the export lines)."""
    print(f"qdrant: {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """`start`, `stop` or `status` (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="qdrant_nodes", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--cluster", type=int, default=0, help="nodes of a cluster (0: one node)")
    parser.add_argument("--dev", action="store_true", help="print QDRANT_URL, not QDRANT_TEST_*")
    args = parser.parse_args(argv)
    run_dir: Path = args.run_dir or _default_run_dir()
    existing = Nodes.load(run_dir)
    if args.command == "start":
        if existing is not None and any(n.alive() for n in existing.nodes):
            say(f"already running in {run_dir}: {', '.join(existing.urls)}")
            print("\n".join(existing.exports(dev=args.dev)))
            return 0
        if binary() is None:
            say(NEEDED)
            return 3
        shutil.rmtree(run_dir, ignore_errors=True)
        started = time.monotonic()
        nodes = Nodes.create(run_dir, size=max(1, args.cluster), cluster=args.cluster > 0)
        try:
            nodes.start()
        except NodeError as exc:
            say(str(exc))
            nodes.stop()
            return 1
        kind = f"a cluster of {len(nodes.nodes)}" if nodes.cluster else "one node"
        say(f"{kind} ready in {time.monotonic() - started:.1f} s at {', '.join(nodes.urls)}")
        print("\n".join(nodes.exports(dev=args.dev)))
        return 0
    if args.command == "stop":
        if existing is None:
            say(f"nothing started in {run_dir}")
            return 0
        existing.stop()
        say(f"stopped; {run_dir} deleted")
        return 0
    if existing is None or not any(n.alive() for n in existing.nodes):
        say("not running")
        return 1
    for node in existing.nodes:
        say(f"{node.name} {'running' if node.alive() else 'down'} at {node.url} (pid {node.pid})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
