"""Run a local sentence-transformers model on PyTorch (the optional `torch` extra).

Used for local models the ONNX path does not reproduce, and for MNEME_EMBEDDING_RUNTIME=torch.
sentence-transformers and torch are imported only here, only when such a model loads; when they
are not installed, `TorchMissingError` lets the embedder name the setting and the install.
Importing this module imports neither.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Matrix = npt.NDArray[np.float32]

INSTALL = "`pip install 'mneme-agent[torch]'` (from a checkout: `pip install -e '.[torch]'`)"
"""How to install the torch extra, for error messages."""


class TorchMissingError(ImportError):
    """sentence-transformers or torch is not installed."""


class TorchLoadError(RuntimeError):
    """sentence-transformers could not load the model; the message carries its reason."""


class TorchEncoder:
    """A sentence-transformers model on the CPU; `encode` returns normalised rows."""

    def __init__(self, model: SentenceTransformer, batch_size: int) -> None:
        self.model = model
        self._batch_size = batch_size
        self.dim = model.get_embedding_dimension()
        """Output dimension, None when the model cannot tell."""

    def encode(self, texts: Sequence[str]) -> Matrix:
        """Embed texts as an (n, dim) float32 array of unit rows."""
        out = self.model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


def load_torch_encoder(source: str, *, local: bool, threads: int, batch_size: int) -> TorchEncoder:
    """Load `source` (a directory, or a hub name in the Hugging Face cache) on torch's CPU."""
    if local:
        # The weights are on disk: make sure nothing tries the hub (no network here).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise TorchMissingError(str(exc)) from exc

    # One intra-op thread by default: on 2 busy cores, two torch threads spin against the
    # event loop, the SQLite worker and each other (measured: 2 texts in 311 ms with two
    # threads under load, 49 ms with one). MNEME_EMBEDDING_THREADS raises it for bulk work.
    torch.set_num_threads(threads)
    bar = hf_logging.is_progress_bar_enabled()
    # No "Loading weights" progress bar in the CLI's output.
    hf_logging.disable_progress_bar()
    try:
        model = SentenceTransformer(source, device="cpu", local_files_only=local)
    except Exception as exc:
        raise TorchLoadError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        if bar:
            hf_logging.enable_progress_bar()
    return TorchEncoder(model, batch_size)
