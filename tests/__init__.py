"""The test suite: unit, contract, integration and end-to-end tests (tests/conftest.py)."""
