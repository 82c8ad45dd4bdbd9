"""The server's sleep schedule, on a real `langgraph dev` (embedded stores, offline): with
MNEME_SLEEP_SCHEDULE on, a user's memory is consolidated without anyone asking."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from memory.beliefs.apperception import KEY as APPERCEPTION
from memory.sleep.levels import LAST_KEY
from tests.e2e.test_rest import serve, stop

pytestmark = pytest.mark.slow


def state(db: Path, tenant: str) -> dict[str, str]:
    if not db.exists():
        return {}
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT key, value FROM tenant_state WHERE tenant = ?", (tenant,))
        return {str(k): str(v) for k, v in rows}
    except sqlite3.OperationalError:  # not set up yet
        return {}
    finally:
        conn.close()


def test_the_server_consolidates_a_user_on_its_schedule(tmp_path: Path) -> None:
    keys = {"sleeper": "sleeper-key-0123456789abcdef"}
    url, proc = serve(tmp_path, keys, MNEME_SLEEP_SCHEDULE="true", MNEME_SLEEP_CHECK_S="1")
    db = tmp_path / "data" / "graph.sqlite3"
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            http.headers["Authorization"] = f"Bearer {keys['sleeper']}"
            added = http.post("/memories", json={"messages": "I'm so happy: I adopted a cat!"})
            assert added.status_code == 201, added.text
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and LAST_KEY not in state(db, "sleeper"):
            time.sleep(0.5)
        found = state(db, "sleeper")
        assert LAST_KEY in found, f"no consolidation ran: {found}"
        assert "deep" in json.loads(found[LAST_KEY])  # never run: deep first
        assert APPERCEPTION in found
    finally:
        stop(proc)
    assert "sleep schedule on" in (tmp_path / "server.log").read_text()
