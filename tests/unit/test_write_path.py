"""The eval's write-path digest covers every module that decides what the embedded store writes."""

from __future__ import annotations

import importlib
import pkgutil

from bench.eval_retrieval import WRITE_PATH


def test_write_path_names_every_module_of_the_sqlite_store_and_its_input_rules() -> None:
    for package in ("memory.stores.sqlite", "memory.stores.graph"):
        path = importlib.import_module(package).__path__
        modules = {package} | {f"{package}.{m.name}" for m in pkgutil.iter_modules(path)}
        missing = sorted(modules - set(WRITE_PATH) - {"memory.stores.graph"})
        assert missing == [], f"add {missing} to bench.eval_retrieval.WRITE_PATH"
    for name in WRITE_PATH:
        importlib.import_module(name)  # every name is a module that exists
