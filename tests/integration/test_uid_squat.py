"""Issue 29, item 2, on every graph backend: an import cannot claim a uid another user will need
(a store item's, a turn's), answers alike whether or not a uid exists in another user's memory,
and export -> erase -> import on this installation still keeps the uids."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.schema import episode_uid
from memory.services import Services
from serve.api import Memory
from serve.store import MnemeStore, item_uid

AT = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


def export_naming(user: str, *uids: str) -> dict[str, object]:
    """An export a caller wrote by hand, claiming `uids` as `user`'s."""
    return {
        "format": "mneme-export",
        "version": 1,
        "user": user,
        "exported_at": AT.isoformat(),
        "episodes": [
            {
                "uid": uid,
                "thread_id": "t",
                "user_text": f"Squatted {n}.",
                "agent_text": "",
                "created_at": AT.isoformat(),
            }
            for n, uid in enumerate(uids)
        ],
    }


async def test_an_import_cannot_claim_a_uid_another_user_will_need(services: Services) -> None:
    mem = Memory(services)
    store_uid = item_uid(("alice", "memories"), "tea")
    turn_uid = episode_uid("alice", "t", "m1")  # what Memory.add gives message id m1
    done = await mem.import_("mallory", export_naming("mallory", store_uid, turn_uid))
    assert not {store_uid, turn_uid} & set(done.uids)
    assert await services.graph.episodes.get("mallory", store_uid) is None

    store = MnemeStore(mem)
    await store.aput(("alice", "memories"), "tea", {"text": "Alice drinks green tea"})
    item = await store.aget(("alice", "memories"), "tea")
    assert item is not None and item.value == {"text": "Alice drinks green tea"}
    added = await mem.add(
        "alice", [{"role": "user", "content": "My code is 7.", "id": "m1"}], thread="t"
    )
    assert added.uids == [turn_uid] and not added.duplicates
    await mem.flush()


async def test_an_import_answers_alike_whatever_another_user_holds(services: Services) -> None:
    mem = Memory(services)
    alice = await mem.add("alice", "Alice's secret: the vault opens with 5150.")
    await mem.flush()
    taken, free = alice.uids[0], "00000000-0000-4000-8000-000000000000"

    on_taken = await mem.import_("mallory", export_naming("mallory", taken))
    on_free = await mem.import_("mallory", export_naming("mallory", free))
    assert len(on_taken.uids) == len(on_free.uids) == 1
    assert not on_taken.duplicates and not on_free.duplicates
    assert taken not in on_taken.uids and free not in on_free.uids
    kept = await services.graph.episodes.get("alice", taken)
    assert kept is not None and kept.user_text.startswith("Alice's secret")

    again = await mem.import_("mallory", export_naming("mallory", taken))
    assert again.duplicates == on_taken.uids  # derived the same way: a re-import is a no-op


async def test_only_a_proven_export_keeps_its_uids(services: Services) -> None:
    mem = Memory(services)
    told = await mem.add("ada", "I keep bees on the roof.")
    await mem.flush()
    exported = (await mem.export("ada")).model_dump(mode="json")
    assert exported["episodes"][0]["proof"]
    await mem.erase("ada")
    restored = await mem.import_("ada", exported)
    assert restored.uids == told.uids  # same installation, same user: the uid comes back

    await mem.erase("ada")
    exported["episodes"][0]["proof"] = "0" * 64  # edited: no longer this installation's proof
    forged = await mem.import_("ada", exported)
    assert forged.uids != told.uids
    other = await mem.import_("bea", (await mem.export("ada")).model_dump(mode="json"))
    assert other.uids != forged.uids  # another user's proof does not hold for bea
    await mem.flush()
