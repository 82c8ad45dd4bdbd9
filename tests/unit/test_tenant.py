"""The tenant rule (`memory.tenant`): what is a tenant id, what is refused and why, and that an
id is never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.tenant import MAX_CHARS, InvalidTenant, problem, tenant_id, valid_ids
from tests.contract._support import BAD_TENANTS

GOOD = [
    "alice",
    "Ada Lovelace",  # spaces inside are kept
    "a" * MAX_CHARS,
    "t'\"`}) DETACH DELETE n //'; DROP TABLE episodes; --%_$param",  # metacharacters are data
    "Zo\u00e9",  # NFC
    "日本語のユーザー",
    "emoji 🧠",
    "memeval-12",
]


@pytest.mark.parametrize("value", GOOD)
def test_a_good_id_is_itself(value: str) -> None:
    assert problem(value) is None
    assert tenant_id(value) == value  # never changed


@pytest.mark.parametrize(("what", "value"), BAD_TENANTS.items(), ids=list(BAD_TENANTS))
def test_a_bad_id_is_refused_with_the_reason(what: str, value: str) -> None:
    reason = problem(value)
    assert reason is not None
    with pytest.raises(InvalidTenant) as refused:
        tenant_id(value, name="user")
    message = str(refused.value)
    assert message.startswith("user ") and reason in message and "1-128 characters" in message
    assert "\x00" not in message and "\x1b" not in message  # shown escaped, never raw


def test_the_reasons_name_the_broken_part() -> None:
    assert problem("alice\x00") == "holds the control character U+0000 at position 5"
    assert problem("alice\ud800") == "holds the lone surrogate U+D800 at position 5"
    assert problem("ali\u200bce") == "holds the format character U+200B at position 3"
    assert problem("a\u2028b") == "holds the line separator U+2028 at position 1"
    assert problem(" alice") == "starts or ends with whitespace"
    assert problem("alice\u00a0") == "starts or ends with whitespace"  # no-break space too
    assert problem("a" * 129) == "is 129 characters long; at most 128 are allowed"
    assert problem("") == "is empty"
    assert problem(42) == "is a int, not a string"
    assert problem("Zoe\u0301") == "is not in Unicode normal form NFC"


def test_one_spelling_is_one_person() -> None:
    # An id cleaned or trimmed into a real one would be that person: every such id is refused.
    for spelling in (" ada", "ada ", "ada\x00", "\u200bada", "ad\u0061\u0308"):
        assert problem(spelling) is not None
    assert tenant_id("ada") == "ada"
    assert tenant_id("Ada") != tenant_id("ada")  # ids compare exactly


def test_maintenance_loops_skip_ids_written_before_the_rule() -> None:
    assert valid_ids(["bob", " ada", "alice\x00", "carol"]) == ["bob", "carol"]


# --------------------------------------------------------------------------- entries without a store

BAD = list(BAD_TENANTS.values())
IDS = list(BAD_TENANTS)


@pytest.mark.parametrize("bad", BAD, ids=IDS)
def test_the_agents_context_refuses_and_never_trims(bad: str) -> None:
    from nodes.context import Context, ContextError

    with pytest.raises(ContextError, match="^context.user_id "):
        Context(user_id=bad)
    assert Context(user_id="alice").tenant == "alice"


@pytest.mark.parametrize("bad", BAD, ids=IDS)
def test_keys_and_jwt_subjects_follow_the_rule(bad: str, tmp_path: Path) -> None:
    import jwt

    from memory.settings import ConfigError
    from serve.apikeys import AuthFailure, KeyRing, add_key, parse_env_keys, valid_user_id

    assert not valid_user_id(bad)
    if bad and bad == bad.strip():  # an entry is split on commas and colons, then trimmed
        with pytest.raises(ConfigError):
            parse_env_keys(f"{bad}:0123456789abcdef0123")
    with pytest.raises(ConfigError, match="1-128 characters"):
        add_key(tmp_path / "keys", bad)
    secret = "s" * 32
    ring = KeyRing({}, secret, "mneme")
    claims = {"sub": bad, "aud": "mneme", "exp": 4_102_444_800}
    with pytest.raises(AuthFailure, match="not a usable user id"):
        ring.identify(jwt.encode(claims, secret, algorithm="HS256"))
    good = jwt.encode({**claims, "sub": "alice"}, secret, algorithm="HS256")
    assert ring.identify(good) == "alice"


@pytest.mark.parametrize("bad", BAD, ids=IDS)
def test_an_mcp_stdio_user_follows_the_rule(bad: str, tmp_path: Path) -> None:
    from memory.settings import Settings
    from serve.mcp import McpSetupError, stdio_user

    settings = Settings(_env_file=None, data_dir=tmp_path, api_keys=None, api_keys_file=None)  # type: ignore[call-arg]
    with pytest.raises(McpSetupError, match="1-128 characters"):
        stdio_user(settings, None, bad)
    assert stdio_user(settings, None, "alice") == "alice"


CLI_BAD = {k: v for k, v in BAD_TENANTS.items() if k not in ("NUL", "lone surrogate")}
"""A command line cannot carry a NUL or a lone surrogate (the OS and the codec refuse them)."""


@pytest.mark.parametrize("bad", CLI_BAD.values(), ids=list(CLI_BAD))
def test_the_cli_refuses_a_bad_user_before_opening_anything(bad: str) -> None:
    from typer.testing import CliRunner

    from cli.main import app

    for command in (["facts"], ["beliefs"], ["goals"], ["diary"], ["consolidate"]):
        result = CliRunner().invoke(app, [*command, "--user", bad])
        assert result.exit_code == 2, (command, result.output)
        shown = " ".join(result.output.replace("\u2502", " ").split())  # rich's box unwrapped
        assert "--user" in shown and "1-128 characters" in shown, (command, result.output)
