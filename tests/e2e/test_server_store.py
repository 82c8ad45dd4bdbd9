"""`MnemeStore` as the server's store (`store.path` in langgraph.json), over the real `langgraph
dev` HTTP store API on SQLite and Neo4j: an item put through `/store/items` is a mneme episode
(found by the REST routes and by retrieval), the namespace's first label is bound to the
caller's key, and bad input is 4xx naming the problem."""

from __future__ import annotations

from typing import Any

import pytest

from serve.store import item_uid
from tests.e2e.test_rest import client, processed, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the keyed server fixture of the REST tests, one per backend


def test_store_items_are_mneme_memory_of_the_caller(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    alice, bob = list(keys)[:2]
    item = {"namespace": [alice, "notes"], "key": "tea", "value": {"text": "I drink green tea"}}
    with client(url, keys[alice]) as a, client(url, keys[bob]) as b:
        put = a.put("/store/items", json=item)
        assert put.status_code == 204, put.text
        got = a.get("/store/items", params={"namespace": f"{alice}.notes", "key": "tea"})
        assert got.status_code == 200, got.text
        assert got.json()["value"] == item["value"]
        assert got.json()["namespace"] == [alice, "notes"]

        # The server's store is mneme: the item is one of alice's episodes, bookkept, recalled.
        uid = item_uid((alice, "notes"), "tea")
        processed(a, [uid])
        assert "green tea" in a.get(f"/memories/{uid}").json()["text"]
        found = a.post(
            "/store/items/search",
            json={"namespace_prefix": [alice], "query": "what do I drink?", "limit": 5},
        )
        assert found.status_code == 200, found.text
        (hit,) = found.json()["items"]
        assert hit["key"] == "tea" and hit["score"] is not None
        listed = a.post("/store/items/search", json={"namespace_prefix": [alice, "notes"]})
        assert [i["key"] for i in listed.json()["items"]] == ["tea"]
        spaces = a.post("/store/namespaces", json={}).json()["namespaces"]
        assert spaces == [[alice, "notes"]]

        # The namespace is bound to the key: bob reaches none of it, and gets only his own.
        assert (
            b.get("/store/items", params={"namespace": f"{alice}.notes", "key": "tea"}).status_code
            == 403
        )
        other = {**item, "value": {"text": "overwritten"}}
        assert b.put("/store/items", json=other).status_code == 403
        assert (
            b.request(
                "DELETE", "/store/items", json={"namespace": [alice, "notes"], "key": "tea"}
            ).status_code
            == 403
        )
        assert b.post("/store/items/search", json={"namespace_prefix": [alice]}).status_code == 403
        assert b.post("/store/namespaces", json={"prefix": [alice]}).status_code == 403
        # An empty prefix is the caller's own (the server answers 500 when the field is missing).
        assert b.post("/store/items/search", json={"namespace_prefix": []}).json()["items"] == []
        assert b.post("/store/namespaces", json={}).json()["namespaces"] == []
        assert b.get(f"/memories/{uid}").status_code == 404
        assert (
            a.get("/store/items", params={"namespace": f"{alice}.notes", "key": "tea"}).json()[
                "value"
            ]
            == item["value"]
        )

        deleted = a.request(
            "DELETE", "/store/items", json={"namespace": [alice, "notes"], "key": "tea"}
        )
        assert deleted.status_code == 204, deleted.text
        assert (
            a.get("/store/items", params={"namespace": f"{alice}.notes", "key": "tea"}).json()
            is None
        )
        assert a.get(f"/memories/{uid}").status_code == 404


def test_bad_store_requests_are_4xx(server: tuple[str, dict[str, str]]) -> None:
    url, keys = server
    user = list(keys)[2]
    with client(url, keys[user]) as c:
        cases: list[tuple[str, str, dict[str, Any], str]] = [
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user], "key": "k" * 600, "value": {}}},
                "key",
            ),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user], "key": "k", "value": [1]}},
                "value",
            ),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user, "a.b"], "key": "k", "value": {}}},
                "a.b",
            ),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [], "key": "k", "value": {}}},
                "namespace",
            ),
            ("GET", "/store/items", {"params": {"namespace": user}}, "Key"),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user], "key": "k", "value": {}, "ttl": 5}},
                "ttl",
            ),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user], "key": "k", "value": {}, "index": False}},
                "index",
            ),
            (
                "POST",
                "/store/items/search",
                {"json": {"namespace_prefix": [user], "limit": "x"}},
                "limit",
            ),
            (
                "PUT",
                "/store/items",
                {"json": {"namespace": [user], "key": "k", "value": {"text": "x" * 300_000}}},
                "(MNEME_MAX_MESSAGE_BYTES)",
            ),
        ]
        for method, path, kwargs, word in cases:
            response = c.request(method, path, **kwargs)
            assert 400 <= response.status_code < 500, (kwargs, response.status_code, response.text)
            assert word in response.text, (kwargs, response.text)
            if word == "(MNEME_MAX_MESSAGE_BYTES)":  # the one limit of every surface
                assert response.status_code == 413, response.text
            assert "Traceback" not in response.text and "/work/" not in response.text
        listed = c.post("/store/items/search", json={"namespace_prefix": []})
        assert listed.json()["items"] == []  # nothing was written
