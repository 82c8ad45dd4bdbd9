"""The tenant rule (`memory.tenant`): what is a tenant id, what is refused and why, and that an
id is never changed."""

from __future__ import annotations

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
