"""The embedder of an OpenAI-compatible embeddings endpoint (OpenAI, vLLM, llama.cpp, Ollama, TEI):
batches, a dimension check and one HTTP client per embedder. `memory.embeddings.embedders.build_embedder`
builds it when `MNEME_EMBEDDING_BASE_URL` is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memory.embeddings.embedders import Embedder, EmbedderError, Matrix

if TYPE_CHECKING:
    import httpx
    from langchain_openai import OpenAIEmbeddings


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
