"""The eval's write-path digest covers every module that decides what the embedded store writes."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from bench.eval_ingest import WRITE_PATH


def test_write_path_names_every_module_of_the_sqlite_store_and_its_input_rules() -> None:
    for package in ("memory.stores.sqlite", "memory.stores.graph"):
        path = importlib.import_module(package).__path__
        modules = {package} | {f"{package}.{m.name}" for m in pkgutil.iter_modules(path)}
        missing = sorted(modules - set(WRITE_PATH) - {"memory.stores.graph"})
        assert missing == [], f"add {missing} to bench.eval_ingest.WRITE_PATH"
    for name in WRITE_PATH:
        importlib.import_module(name)  # every name is a module that exists


NOT_WRITING = {
    "bench",
    "graph",
    "nodes.context",
    "nodes.state",
    "memory",
    "memory.beliefs",
    "memory.embeddings",
    "memory.knowledge",
    "memory.retrieval",
    "memory.sleep",
    "memory.text",
    "memory.write",
    "tasks",
    "tasks.facts",
    "memory.embeddings.bert_graph",
    "memory.embeddings.onnx_encoder",
    "memory.embeddings.torch_encoder",
    "memory.embeddings.install",  # whether the model is installed; embeds nothing kept
    "memory.retrieval.ranking",
    "memory.retrieval.recipes",
    "memory.retrieval.candidates",
    "memory.retrieval.facts",
    "memory.sleep.leases",
    "memory.settings",
    "memory.stores",
    "memory.stores.base",
    "memory.stores.errors",
    "memory.stores.graph",
    "memory.stores.vectors",
    "nodes",
    "tasks.llm",
    "memory.text.ordering",
    "tasks.offline_answer",
    "tasks.diary_context",
    "tasks.temporal",
}
"""Modules the ingest imports that do not decide what it writes: packages, the embedder's
runtimes (the fingerprint names the model), read-side helpers, settings and interfaces (and
the consolidation lease, which decides who runs sleep, not what is stored)."""


def test_every_module_the_ingest_imports_is_on_the_write_path_or_known_not_to_write() -> None:
    # The embedded stores are opened as the ingest opens them: some modules load only then.
    code = (
        "import asyncio, sys, tempfile, pathlib, bench.eval_ingest, graph.bookkeeping\n"
        "from memory.services import ChatModels, Services\n"
        "from memory.settings import load_settings\n"
        "async def main():\n"
        "    with tempfile.TemporaryDirectory() as tmp:\n"
        "        settings = bench.eval_ingest.eval_settings(load_settings(), pathlib.Path(tmp))\n"
        "        services = await Services.open(settings, chat=ChatModels.offline_for(settings))\n"
        "        await services.close()\n"
        "asyncio.run(main())\n"
        "print('\\n'.join(m for m in sys.modules if m.split('.')[0] in "
        "('bench', 'graph', 'memory', 'nodes', 'serve', 'tasks')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = {m for m in out.stdout.split() if not m.startswith("memory.services")}
    unclassified = sorted(imported - set(WRITE_PATH) - NOT_WRITING)
    assert unclassified == [], f"add {unclassified} to WRITE_PATH or to NOT_WRITING"


def test_code_of_ignores_prose_not_code() -> None:
    from bench.eval_ingest import code_of

    base = '"""Doc."""\n\nX = 1\n"""About X."""\n\n\ndef f(a):\n    """Doc."""\n    return a + X\n'
    prose = '"""Other doc."""\n# a comment\nX = 1  # one\n\n\ndef f(a):\n    return a + X\n'
    code = base.replace("a + X", "a - X")
    assert code_of(base) == code_of(prose)
    assert code_of(base) != code_of(code)


def test_stored_ingests_are_copied_with_their_holes(tmp_path: Path) -> None:
    from bench.eval_ingest import BLOCK, copy_sparse

    src = tmp_path / "segment.dat"
    with src.open("wb") as f:
        f.write(b"head")
        f.seek(8 * BLOCK)
        f.write(b"tail")
    dst = tmp_path / "copy.dat"
    copy_sparse(str(src), str(dst))
    assert dst.read_bytes() == src.read_bytes()
    assert dst.stat().st_blocks * 512 < 2 * BLOCK  # the zeros were not written out
