"""The replica bench's audit of the workers' logs: `bench.replicas.consolidations` counts a failed
consolidation (`tenant error Type`) instead of reading it as a time span, and
`bench.replicas.bookkept_twice` tells a race (two runs with effect over the same content) from
the re-run over a whole turn once its reply was attached."""

from bench.replicas import bookkept_twice, consolidations


def test_spans_busy_errors_and_overlaps_are_told_apart() -> None:
    lines = [
        ["c0", "10.0", "12.0"],
        ["c0", "11.5", "13.0"],  # began before the first ended: an overlap
        ["c1", "10.0", "11.0"],
        ["c1", "11.0", "12.0"],  # began as the other ended: none
        ["c2", "busy"],
        ["c3", "error", "ServiceUnavailable"],
    ]

    assert consolidations(lines) == (4, 1, 1, 1)


def test_no_lines_no_runs() -> None:
    assert consolidations([]) == (0, 0, 0, 0)


def test_a_second_run_over_the_same_content_is_a_race_one_over_new_content_is_not() -> None:
    runs = [
        ["e1", "pending", "1.0", "2.0", "aaaa"],  # a sweep bookkept the user's side
        ["e1", "stored", "3.0", "4.0", "bbbb"],  # the reply came: the whole turn again
        ["e1", "processed", "5.0", "5.1", "bbbb"],  # a later run found it done
        ["e2", "pending", "1.0", "3.0", "cccc"],
        ["e2", "pending", "2.0", "4.0", "cccc"],  # both found it unfinished: a race
    ]

    assert bookkept_twice(runs) == (["e2"], ["e1"])
