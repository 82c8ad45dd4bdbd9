"""Integration tests against the real stores, on every graph backend."""
