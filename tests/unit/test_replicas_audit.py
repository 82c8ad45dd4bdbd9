"""`bench.replicas.consolidations`: the replica bench's audit of the workers' consolidation log,
where a failed consolidation (`tenant error Type`) is counted, not read as a time span."""

from bench.replicas import consolidations


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
