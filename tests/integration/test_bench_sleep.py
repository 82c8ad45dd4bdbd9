"""`mneme bench sleep` on a short year: both tenants hold summaries of the same sessions, so the
vectors compared differ by what forgetting removed, and no evidence is lost; the end-of-year
questions are scored by every ranking, and where nothing slept they all rank alike."""

from __future__ import annotations

from bench.sleep import VARIANTS, bench_sleep


async def test_a_short_simulated_year_compares_like_with_like() -> None:
    report = (await bench_sleep(episodes=150, seed=3, deep_every_days=60)).as_dict()
    kinds = report["vectors_by_kind"]
    assert set(kinds) == {"sleep", "awake"}
    for tenant in ("sleep", "awake"):
        assert report["vectors"][tenant] == sum(kinds[tenant].values())
    # forgetting may drop a session whose turns are all gone, never add one
    assert 0 < kinds["sleep"]["summaries"] <= kinds["awake"]["summaries"]
    assert kinds["sleep"]["derivatives"] <= kinds["awake"]["derivatives"]
    assert report["unsupported_beliefs_and_current_facts"] == {"sleep": 0, "awake": 0}
    assert report["consolidation"]["llm_calls"] == 0
    # The end-of-year groups, by every ranking; the awake tenant never slept, so memory's state
    # is not read there and every ranking with diversity (all but `relevance`) ranks alike, but
    # for `current`, which moves the newest statement of the same thing first.
    use = report["use_recall"]
    assert set(use["sleep"]) == set(VARIANTS) and set(use["awake"]) == set(VARIANTS)
    awake = [g for name, g in use["awake"].items() if name not in ("relevance", "current")]
    assert all(groups == awake[0] for groups in awake)
    assert set(awake[0]) == {"used", "changed", "unused"}
    # The cornerstones left at the end, counted for each tenant (the hop to them is scored by
    # the `no_cornerstones` ranking).
    assert set(report["cornerstones"]) == {"sleep", "awake"}
    assert all(isinstance(n, int) and n >= 0 for n in report["cornerstones"].values())
