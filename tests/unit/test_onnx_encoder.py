"""The ONNX Runtime path of the local embedder, against the real all-MiniLM-L6-v2: same vectors as
PyTorch, the cache under MNEME_CACHE_DIR, and recovery from a bad cached file."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from memory.embeddings import EmbedderError, LocalEmbedder, build_embedder
from memory.onnx_encoder import MICRO_BATCH, cache_path, unsupported_reason
from memory.settings import ConfigError, load_settings
from tests.conftest import make_settings

TEXTS = [
    "",
    "   ",
    "\x00",
    "ok",
    "The cat sat on the mat.",
    "Ünïcödé façade — 日本語のテキスト, emoji 🙂🚀 and Ελληνικά",
    "When did Melanie paint a sunrise, and what did Caroline say about it afterwards?",
    " ".join(f"token{i} of a very long memory" for i in range(200)),  # > 256 tokens: truncated
]
"""Empty-ish, unicode, ordinary, and longer than the model's max_seq_length."""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX cache for the module, so the export happens once."""
    return tmp_path_factory.mktemp("mneme-cache")


@pytest.fixture(scope="module")
async def onnx_embedder(cache_dir: Path) -> AsyncIterator[LocalEmbedder]:
    emb = LocalEmbedder(runtime="auto", cache_dir=cache_dir)
    await emb.embed_query("warm up")
    yield emb
    await emb.close()


@pytest.fixture(scope="module")
async def torch_embedder(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalEmbedder]:
    settings = make_settings(tmp_path_factory.mktemp("torch"), embedding_runtime="torch")
    emb = build_embedder(settings)
    assert isinstance(emb, LocalEmbedder)
    await emb.embed_query("warm up")
    yield emb
    await emb.close()


def _onnx_files(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "onnx").glob("*"))


async def test_auto_runs_on_onnx_and_caches_one_file(
    onnx_embedder: LocalEmbedder, cache_dir: Path
) -> None:
    assert onnx_embedder.runtime == "onnx"
    files = _onnx_files(cache_dir)
    assert [f.suffix for f in files] == [".onnx"]  # no temp file left behind
    assert files[0].name.startswith("all-minilm-l6-v2-")
    assert onnx_embedder.fingerprint == "all-minilm-l6-v2_384"  # collections do not change


async def test_torch_setting_runs_on_torch(torch_embedder: LocalEmbedder) -> None:
    assert torch_embedder.runtime == "torch"


async def test_onnx_vectors_equal_torch_vectors(
    onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> None:
    fast = await onnx_embedder.embed_documents(TEXTS)
    slow = await torch_embedder.embed_documents(TEXTS)
    assert fast.dtype == np.float32 and fast.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(fast - slow).max()) < 1e-5
    for text, row in zip(TEXTS, slow, strict=True):
        assert float(np.abs(await onnx_embedder.embed_query(text) - row).max()) < 1e-5


async def test_truncation_matches_the_model(onnx_embedder: LocalEmbedder) -> None:
    long_text = TEXTS[-1]
    longer = long_text + " and a tail that lies far beyond the 256th token"
    a, b = await onnx_embedder.embed_documents([long_text, longer])
    assert float(np.abs(a - b).max()) < 1e-6  # the tail is cut off, as in sentence-transformers


async def test_a_mixed_length_batch_equals_one_by_one(onnx_embedder: LocalEmbedder) -> None:
    # More than MICRO_BATCH texts, lengths out of order: the encoder groups them by length.
    texts = [*TEXTS, *(f"memory {i}: " + "and then " * (i * 7 % 23) for i in range(30))]
    assert len(texts) > MICRO_BATCH
    batch = await onnx_embedder.embed_documents(texts)
    single = np.stack([await onnx_embedder.embed_query(t) for t in texts])
    assert float(np.abs(batch - single).max()) < 1e-5


async def test_cache_dir_comes_from_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_embedder: LocalEmbedder
) -> None:
    monkeypatch.setenv("MNEME_CACHE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("MNEME_EMBEDDING_RUNTIME", "ONNX")
    settings = make_settings(tmp_path)
    assert settings.embedding_runtime == "onnx"
    assert settings.cache_dir == tmp_path / "from-env"
    emb = build_embedder(settings)
    assert isinstance(emb, LocalEmbedder)
    try:
        assert emb.runtime == "onnx"
        assert len(_onnx_files(tmp_path / "from-env")) == 1
        expected = await onnx_embedder.embed_query("where is the cache?")
        assert float(np.abs(await emb.embed_query("where is the cache?") - expected).max()) < 1e-5
    finally:
        await emb.close()


def test_an_unknown_runtime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEME_EMBEDDING_RUNTIME", "gpu")
    with pytest.raises(ConfigError, match=r"MNEME_EMBEDDING_RUNTIME='gpu' is not one of auto"):
        load_settings(_env_file=None)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 3], id="truncated"),
        pytest.param(lambda data: b"not an onnx model", id="garbage"),
    ],
)
async def test_a_corrupt_cached_file_is_replaced(
    tmp_path: Path, cache_dir: Path, onnx_embedder: LocalEmbedder, damage: object
) -> None:
    good = _onnx_files(cache_dir)[0]
    mine = tmp_path / "cache"
    (mine / "onnx").mkdir(parents=True)
    data = good.read_bytes()
    assert callable(damage)
    (mine / "onnx" / good.name).write_bytes(damage(data))
    emb = LocalEmbedder(runtime="onnx", cache_dir=mine)
    try:
        vector = await emb.embed_query("is this still right?")
        assert emb.runtime == "onnx"
        assert (mine / "onnx" / good.name).stat().st_size == len(data)
        expected = await onnx_embedder.embed_query("is this still right?")
        assert float(np.abs(vector - expected).max()) < 1e-5
    finally:
        await emb.close()


async def test_a_stale_cached_export_is_caught_by_the_check(
    tmp_path: Path, cache_dir: Path, torch_embedder: LocalEmbedder
) -> None:
    """A loadable ONNX file of *other* weights under the cache name: vectors differ, re-export."""
    import torch

    model = torch_embedder._model
    assert model is not None
    changed = tmp_path / "changed-model"
    model.save(str(changed))
    from sentence_transformers import SentenceTransformer

    other = SentenceTransformer(str(changed), device="cpu", local_files_only=True)
    with torch.no_grad():
        for param in other[0].auto_model.parameters():
            param.mul_(1.05)
    other.save(str(changed))
    mine = tmp_path / "cache"
    stale = cache_path(other, slug="changed-model", cache_dir=mine)
    stale.parent.mkdir(parents=True)
    shutil.copyfile(_onnx_files(cache_dir)[0], stale)
    before = stale.read_bytes()

    emb = LocalEmbedder(str(changed), runtime="onnx", cache_dir=mine)
    fallback = LocalEmbedder(str(changed), runtime="torch")
    try:
        assert emb.runtime == "onnx"
        assert stale.read_bytes() != before
        text = "a sentence for the changed weights"
        diff = np.abs(await emb.embed_query(text) - await fallback.embed_query(text)).max()
        assert float(diff) < 1e-5
    finally:
        await emb.close()
        await fallback.close()


@pytest.fixture
def cls_pooling_model(tmp_path: Path, torch_embedder: LocalEmbedder) -> Path:
    """The same model with CLS pooling: a pipeline the ONNX path does not reproduce."""
    model = torch_embedder._model
    assert model is not None
    path = tmp_path / "cls-model"
    model.save(str(path))
    pooling = next(path.glob("*Pooling/config.json"))
    config = json.loads(pooling.read_text())
    config["pooling_mode"] = "cls"
    pooling.write_text(json.dumps(config))
    return path


async def test_an_unsupported_model_runs_on_torch_under_auto(
    cls_pooling_model: Path, tmp_path: Path
) -> None:
    emb = LocalEmbedder(str(cls_pooling_model), runtime="auto", cache_dir=tmp_path / "cache")
    try:
        assert emb.runtime == "torch"
        assert emb._model is not None
        assert "not mean pooling" in (unsupported_reason(emb._model) or "")
        assert (await emb.embed_query("still works")).shape == (384,)
        assert not (tmp_path / "cache").exists()
    finally:
        await emb.close()


async def test_onnx_setting_with_an_unsupported_model_names_the_reason(
    cls_pooling_model: Path, tmp_path: Path
) -> None:
    emb = LocalEmbedder(str(cls_pooling_model), runtime="onnx", cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_RUNTIME=onnx") as err:
        await emb.embed_query("hello")
    assert "not mean pooling" in str(err.value)
    assert "MNEME_EMBEDDING_RUNTIME=auto" in str(err.value)


async def test_an_unwritable_cache_falls_back_to_torch_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, torch_embedder: LocalEmbedder
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    emb = LocalEmbedder(runtime="auto", cache_dir=blocker)
    try:
        with caplog.at_level("WARNING", logger="memory.embeddings"):
            assert emb.runtime == "torch"
        warnings = [r for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and "cannot export" in warnings[0].getMessage()
        expected = await torch_embedder.embed_query("fallback")
        assert float(np.abs(await emb.embed_query("fallback") - expected).max()) < 1e-6
    finally:
        await emb.close()


async def test_without_onnxruntime_auto_warns_once_and_onnx_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    emb = LocalEmbedder(runtime="auto", cache_dir=tmp_path / "cache")
    strict = LocalEmbedder(runtime="onnx", cache_dir=tmp_path / "cache")
    try:
        with caplog.at_level("WARNING", logger="memory.embeddings"):
            assert emb.runtime == "torch"
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and "onnxruntime is not installed" in warnings[0]
        with pytest.raises(EmbedderError, match="onnxruntime is not installed"):
            await strict.embed_query("hello")
    finally:
        await emb.close()
