"""Benchmarks and the evaluation harness: `mneme bench ...` and `mneme eval ...`."""
