"""Settings: defaults, derived values, and errors that name the variable and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.settings import ConfigError, Settings, load_settings, platform_data_dir

ENV_VARS = (
    "NEO4J_URI",
    "MNEME_GRAPH_BACKEND",
    "QDRANT_URL",
    "QDRANT_PATH",
    "MNEME_QDRANT_REPLICATION",
    "MNEME_QDRANT_WRITE_CONSISTENCY",
    "MNEME_DATA_DIR",
    "MNEME_EMBEDDING_BASE_URL",
    "MNEME_EMBEDDING_DIM",
    "MNEME_LLM_BASE_URL",
    "OPENAI_API_KEY",
    "MNEME_LLM_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env file


def test_defaults_are_the_embedded_stores_in_the_users_data_dir() -> None:
    s = load_settings()
    assert s.data_dir == platform_data_dir() and s.data_dir.is_absolute()
    assert s.resolved_graph_backend == "sqlite"
    assert s.resolved_sqlite_path == s.data_dir / "graph.sqlite3"
    assert s.resolved_qdrant_location == str(s.data_dir / "vectors")
    assert s.vector_backend == "qdrant-edge" and s.data_dir_note is None
    assert not s.llm_configured


def test_an_earlier_versions_dot_mneme_is_used_with_a_note(tmp_path: Path) -> None:
    (tmp_path / ".mneme").mkdir()
    (tmp_path / ".mneme" / "graph.sqlite3").write_bytes(b"")
    s = load_settings()
    assert s.data_dir == tmp_path / ".mneme"
    assert s.data_dir_note and "MNEME_DATA_DIR" in s.data_dir_note


def test_mneme_data_dir_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "mine"))
    s = load_settings()
    assert s.data_dir == tmp_path / "mine" and s.data_dir_note is None


def test_neo4j_uri_selects_neo4j(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:7687")
    assert load_settings().resolved_graph_backend == "neo4j"


def test_qdrant_memory_and_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_PATH", ":memory:")
    assert load_settings().resolved_qdrant_location == ":memory:"
    assert load_settings().vector_backend == "qdrant"
    monkeypatch.delenv("QDRANT_PATH")
    monkeypatch.setenv("QDRANT_URL", "http://localhost:6333")
    assert load_settings().resolved_qdrant_location == "http://localhost:6333"
    assert load_settings().vector_backend == "qdrant"
    nodes = "http://q1:6333,http://q2:6333, http://q3:6333"  # the nodes of one cluster
    monkeypatch.setenv("QDRANT_URL", nodes)
    monkeypatch.setenv("MNEME_QDRANT_REPLICATION", "2")
    s = load_settings()
    assert s.resolved_qdrant_location == nodes and s.qdrant_replication == 2
    assert (s.qdrant_shards, s.qdrant_write_consistency, s.qdrant_per_tenant_hnsw) == (1, 1, True)


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"MNEME_GRAPH_BACKEND": "neo4j"}, ["NEO4J_URI"]),
        ({"MNEME_GRAPH_BACKEND": "sqlite", "NEO4J_URI": "bolt://x:7687"}, ["NEO4J_URI"]),
        ({"NEO4J_URI": "http://localhost:7474"}, ["NEO4J_URI", "bolt://"]),
        ({"QDRANT_URL": "http://q:6333", "QDRANT_PATH": "/tmp/q"}, ["QDRANT_URL", "QDRANT_PATH"]),
        ({"QDRANT_URL": "q:6333"}, ["QDRANT_URL"]),
        ({"QDRANT_URL": "http://q1:6333,q2:6333"}, ["QDRANT_URL", "commas"]),
        (
            {"QDRANT_URL": "http://q:6333", "MNEME_QDRANT_WRITE_CONSISTENCY": "2"},
            ["MNEME_QDRANT_WRITE_CONSISTENCY", "MNEME_QDRANT_REPLICATION"],
        ),
        ({"MNEME_EMBEDDING_BASE_URL": "http://e/v1"}, ["MNEME_EMBEDDING_DIM"]),
        ({"MNEME_SERVER_URL": "127.0.0.1:2025"}, ["MNEME_SERVER_URL", "http://"]),
        ({"MNEME_EMBEDDING_DIM": "-3"}, ["MNEME_EMBEDDING_DIM"]),
        ({"MNEME_GRAPH_BACKEND": "postgres"}, ["GRAPH_BACKEND"]),
    ],
)
def test_bad_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], names: list[str]
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    for name in names:
        assert name in str(info.value)


def test_settings_are_not_read_at_import(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "MNEME_GRAPH_BACKEND": "neo4j"}  # invalid without NEO4J_URI
    env.pop("NEO4J_URI", None)
    code = "import memory.settings, memory.services, memory.write.episodes, memory.services.doctor"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_explicit_values_override_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://elsewhere:7687")
    s = Settings(_env_file=None, neo4j_uri=None, graph_backend="sqlite")  # type: ignore[call-arg]
    assert s.resolved_graph_backend == "sqlite"
