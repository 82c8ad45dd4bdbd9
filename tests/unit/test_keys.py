"""`mneme keys add` with nothing configured: the key goes to `<data dir>/api-keys`, which the
server then reads (so the README's REST snippet works as written); a keys file named by
MNEME_API_KEYS_FILE is used instead and must exist for the server to start."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from memory.settings import ConfigError, load_settings
from serve.apikeys import load_keyring


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("MNEME_API_KEYS_FILE", "MNEME_API_KEYS", "MNEME_JWT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    return tmp_path / "data"


def test_keys_add_without_a_keys_file_uses_the_data_directory(data_dir: Path) -> None:
    assert not load_settings().auth_configured  # nothing yet: the server is loopback-only
    result = CliRunner().invoke(app, ["keys", "add", "--user", "ada"])
    assert result.exit_code == 0, result.output
    key = result.output.strip().splitlines()[-1]
    assert (data_dir / "api-keys").is_file()
    assert str(data_dir / "api-keys") in " ".join(result.output.split())
    settings = load_settings()
    assert settings.auth_configured
    assert load_keyring(settings).identify(key) == "ada"


def test_a_named_keys_file_is_used_and_must_exist(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "elsewhere" / "keys"
    monkeypatch.setenv("MNEME_API_KEYS_FILE", str(named))
    with pytest.raises(ConfigError, match="MNEME_API_KEYS_FILE cannot be read"):
        load_keyring(load_settings())
    result = CliRunner().invoke(app, ["keys", "add", "--user", "bob"])
    assert result.exit_code == 0, result.output
    assert named.is_file() and not (data_dir / "api-keys").exists()
    assert load_keyring(load_settings()).identify(result.output.strip().splitlines()[-1]) == "bob"
