"""Run a sentence-transformers model's transformer with ONNX Runtime instead of PyTorch.

On a small CPU, ONNX Runtime runs all-MiniLM-L6-v2 about three times faster than PyTorch for
one query, with the same vectors (max abs difference ~1e-7). Only the plain pipeline qualifies:
Transformer → mean Pooling → optional Normalize, no prompt, no truncated dimension. Tokenising
and mean pooling happen here in numpy, exactly as the sentence-transformers modules do them.

The exported graph is cached under `<MNEME_CACHE_DIR>/onnx/`, keyed by the weights and the
exporter's versions, written atomically. Every load checks the ONNX vectors against PyTorch's.
This module builds the encoder or says why it cannot (`OnnxUnavailableError`); choosing PyTorch
instead is the embedder's decision. It must not import torch or onnxruntime at import time.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.transformer import Transformer
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

OPSET = 17
"""ONNX opset of the export (the TorchScript exporter's well-trodden path for BERT-likes)."""
_RECIPE = "1"
"""Bumped whenever the export recipe below changes, so old cache files are not reused."""
TOLERANCE = 1e-4
"""Largest abs difference from PyTorch's normalised vectors at which the ONNX graph is used."""
PROBES = (
    "hello",
    "Where did Caroline go hiking with her friends after the support group last summer?",
)
"""Checked on every load, as one batch so that the padding mask is exercised too."""
MICRO_BATCH = 16
"""Most texts per ONNX Runtime call; larger batches are split into groups of similar length."""
MAX_PADDING = 1.3
"""A text joins a group only if it is at most this many times as long (in tokens) as the
group's shortest: padding a 20-token text to 100 tokens costs five times its own work."""
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_HUB_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_MAX_PARAM_BYTES = 1 << 30  # a single-file ONNX model holds at most 2 GiB; stay well clear

Matrix = npt.NDArray[np.float32]


class OnnxUnavailableError(RuntimeError):
    """ONNX Runtime cannot run this model here; the message says why."""


class OnnxUnsupportedError(OnnxUnavailableError):
    """The model's pipeline is not the plain one this module reproduces (not a failure)."""


class OnnxEncoder:
    """The transformer of a sentence-transformers model as an ONNX Runtime session.

    `encode` returns mean-pooled token embeddings, not normalised (the embedder normalises).
    Not thread-safe: the caller serialises calls, as the embedder does with its lock.
    """

    def __init__(self, session: Any, tokenizer: Any, max_length: int, path: Path) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._inputs = [i.name for i in session.get_inputs()]
        self.path = path
        """The cached ONNX file the session was loaded from."""

    def encode(self, texts: Sequence[str]) -> Matrix:
        """Embed texts as an (n, dim) float32 array of mean-pooled, unnormalised rows."""
        texts = list(texts)
        if len(texts) <= 1:
            return self._run(texts)
        # A batch is padded to its longest text, and the transformer's cost grows with the padded
        # length: run texts of similar length together. Measured: 64 texts of 17-53 tokens at
        # 117 texts/s in sorted groups vs 68 as one batch; an episode's 3 texts (a 20-token chunk,
        # its 100-token context derivative, a paraphrase) in 59 ms apart vs 91 ms padded.
        lengths = [len(ids) for ids in self._tokenize(texts, padding=False)["input_ids"]]
        groups: list[list[int]] = []
        for i in sorted(range(len(texts)), key=lengths.__getitem__):
            last = groups[-1] if groups else None
            if (
                last is None
                or len(last) >= MICRO_BATCH
                or lengths[i] > MAX_PADDING * lengths[last[0]]
            ):
                groups.append([i])
            else:
                last.append(i)
        if len(groups) == 1:
            return self._run(texts)
        parts = [(group, self._run([texts[i] for i in group])) for group in groups]
        rows = np.empty((len(texts), parts[0][1].shape[1]), dtype=np.float32)
        for group, part in parts:
            rows[group] = part
        return rows

    def _tokenize(self, texts: list[str], *, padding: bool) -> Any:
        # The call the sentence-transformers Transformer module makes, but to numpy.
        return self._tokenizer(
            texts,
            padding=padding,
            truncation="longest_first",
            max_length=self._max_length,
            return_tensors="np" if padding else None,
        )

    def _run(self, texts: list[str]) -> Matrix:
        tokens = self._tokenize(texts, padding=True)
        feed = {name: np.asarray(tokens[name], dtype=np.int64) for name in self._inputs}
        hidden = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        # Masked mean pooling, as the sentence-transformers Pooling module does it.
        mask = np.asarray(tokens["attention_mask"], dtype=np.float32)[..., None]
        summed = (hidden * mask).sum(axis=1)
        counts = np.clip(mask.sum(axis=1), 1e-9, None)
        return np.asarray(summed / counts, dtype=np.float32)


def unsupported_reason(model: SentenceTransformer) -> str | None:
    """Why this model's pipeline cannot run on the ONNX path, or None when it can."""
    from sentence_transformers.base.modules.normalize import Normalize
    from sentence_transformers.base.modules.transformer import Transformer
    from sentence_transformers.sentence_transformer.modules.pooling import Pooling

    modules = list(model)
    kinds = [type(m).__name__ for m in modules]
    if len(modules) not in (2, 3) or type(modules[0]) is not Transformer:
        return f"its modules are {kinds}, not Transformer → Pooling → optional Normalize"
    transformer, pooling = _transformer(model), modules[1]
    if type(pooling) is not Pooling or getattr(pooling, "pooling_mode", None) != "mean":
        return f"its pooling is {pooling!r}, not mean pooling only"
    if len(modules) == 3 and (
        type(modules[2]) is not Normalize
        or getattr(modules[2], "module_input_name", None) != "sentence_embedding"
    ):
        return f"its last module is {modules[2]!r}, not Normalize of the sentence embedding"
    text_only = {"text": {"method": "forward", "method_output_name": "last_hidden_state"}}
    if (
        getattr(transformer, "transformer_task", None) != "feature-extraction"
        or getattr(transformer, "modality_config", None) != text_only
        or getattr(transformer, "processing_kwargs", None)
        or transformer.tokenizer is None
    ):
        return "its Transformer is not a plain text feature extractor with a tokenizer"
    names = set(transformer.tokenizer.model_input_names)
    if not {"input_ids", "attention_mask"} <= names or not names <= set(_MODEL_INPUTS):
        return f"its tokenizer produces {sorted(names)}, not input ids and an attention mask"
    if not transformer.max_seq_length:
        return "it has no maximum sequence length"
    prompt = model.prompts.get(model.default_prompt_name or "", "")
    if prompt or model.truncate_dim is not None:
        return "it has a default prompt or a truncated output dimension"
    size = sum(p.numel() * p.element_size() for p in transformer.auto_model.parameters())
    if size > _MAX_PARAM_BYTES:
        return f"its weights ({size >> 20} MiB) are too large for a single-file ONNX export"
    return None


def load_onnx_encoder(
    model: SentenceTransformer, *, slug: str, cache_dir: Path, threads: int
) -> OnnxEncoder:
    """An ONNX encoder for `model`, exported once to the cache and checked against PyTorch.

    Raises `OnnxUnsupportedError` when the pipeline does not qualify, `OnnxUnavailableError`
    when onnxruntime is missing or the export, the session or the check fails. A cached file
    that fails to load or to match (truncated, stale) is removed and exported again, once.
    """
    try:
        reason = unsupported_reason(model)
    except Exception as exc:  # a model shaped unlike any we know: not ours to crash on
        reason = f"its modules cannot be inspected ({type(exc).__name__}: {exc})"
    if reason:
        raise OnnxUnsupportedError(reason)
    try:
        import onnx  # noqa: F401  (the TorchScript exporter needs it)
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailableError(
            f"{exc.name or 'onnxruntime'} is not installed (`pip install onnxruntime onnx`)"
        ) from exc
    try:
        path = cache_path(model, slug=slug, cache_dir=cache_dir)
    except Exception as exc:
        raise OnnxUnavailableError(f"cannot key the ONNX cache on its weights: {exc}") from exc
    cached = path.is_file()
    while True:
        if not cached:
            try:
                export(model, path)
            except Exception as exc:  # an exporter or disk error: never fatal to the embedder
                raise OnnxUnavailableError(
                    f"cannot export it to {path}: {type(exc).__name__}: {exc}"
                ) from exc
        try:
            encoder = _open(model, path, threads)
            _check_against_torch(model, encoder)
            return encoder
        except Exception as exc:
            problem = exc
        # A file that does not load or does not match must not be found again next time.
        with contextlib.suppress(OSError):
            path.unlink()
        if not cached:
            if isinstance(problem, OnnxUnavailableError):
                raise problem
            raise OnnxUnavailableError(f"{type(problem).__name__}: {problem}") from problem
        log.info("cached ONNX model %s was unusable (%s); exporting it again", path, problem)
        cached = False


def cache_path(model: SentenceTransformer, *, slug: str, cache_dir: Path) -> Path:
    """`<cache_dir>/onnx/<slug>-<hash>.onnx`, the hash over the weights and the exporter."""
    import torch
    import transformers

    source = str(_transformer(model).auto_model.config._name_or_path)
    files = _weight_files(source)
    digest = hashlib.sha256()
    parts = [source, torch.__version__, transformers.__version__]
    parts += [str(OPSET), _RECIPE, ",".join(_input_names(model))]
    for weight in files:
        stat = weight.stat()
        parts.append(f"{weight.name}:{stat.st_size}:{stat.st_mtime_ns}")
    for part in parts:
        digest.update(part.encode() + b"\0")
    return cache_dir.expanduser() / "onnx" / f"{slug}-{digest.hexdigest()[:12]}.onnx"


def export(model: SentenceTransformer, path: Path) -> None:
    """Export the model's transformer to `path` atomically (temp file, then rename)."""
    import torch

    transformer = _transformer(model)
    names = _input_names(model)

    class Keywords(torch.nn.Module):
        """Positional ONNX inputs to keyword arguments: `BertModel.forward` needs keywords."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            out = self.inner(**dict(zip(names, inputs, strict=True)), return_dict=True)
            hidden: torch.Tensor = out.last_hidden_state
            return hidden

    # A padded batch, so the traced graph keeps the attention-mask path.
    sample = _tokenizer(model)(list(PROBES), padding=True, return_tensors="pt")
    args = tuple(sample[name] for name in names)
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two processes may export at once and a crash may stop one midway: each writes its own
    # temp file in the same directory and renames it over the final name only when complete.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    os.close(fd)
    try:
        # The legacy exporter warns (deprecation, tracer) about things that do not apply to an
        # encoder traced in eval mode; pytest turns warnings into errors, users need not see them.
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Keywords(transformer.auto_model).eval(),
                args,
                tmp,
                input_names=list(names),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=OPSET,
                do_constant_folding=True,
                dynamo=False,
                verbose=False,
            )
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _weight_files(source: str) -> list[Path]:
    """The weight files of a model directory, or of a hub model in the Hugging Face cache."""
    local = Path(source).expanduser()
    if local.is_dir():
        files = sorted(p for p in local.iterdir() if p.suffix in _WEIGHT_SUFFIXES and p.is_file())
    else:
        from huggingface_hub import try_to_load_from_cache

        cached = (try_to_load_from_cache(source, name) for name in _HUB_WEIGHT_FILES)
        files = [Path(p) for p in cached if isinstance(p, str)]
    if not files:
        raise OSError(f"no weight files ({', '.join(_WEIGHT_SUFFIXES)}) found for {source}")
    return files


def _transformer(model: SentenceTransformer) -> Transformer:
    return cast("Transformer", model[0])


def _tokenizer(model: SentenceTransformer) -> PreTrainedTokenizerBase:
    tokenizer = _transformer(model).tokenizer
    if tokenizer is None:  # unsupported_reason already refused such a model
        raise OnnxUnsupportedError("its Transformer has no tokenizer")
    return tokenizer


def _input_names(model: SentenceTransformer) -> list[str]:
    names = set(_tokenizer(model).model_input_names)
    return [name for name in _MODEL_INPUTS if name in names]


def _open(model: SentenceTransformer, path: Path, threads: int) -> OnnxEncoder:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no notes about unused initialisers on stderr
    try:
        session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise OnnxUnavailableError(f"cannot load {path}: {type(exc).__name__}: {exc}") from exc
    max_length = _transformer(model).max_seq_length
    if not max_length:  # unsupported_reason already refused such a model
        raise OnnxUnsupportedError("it has no maximum sequence length")
    return OnnxEncoder(session, _tokenizer(model), max_length, path)


def _check_against_torch(model: SentenceTransformer, encoder: OnnxEncoder) -> None:
    expected = model.encode(
        list(PROBES), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    actual = encoder.encode(PROBES)
    actual = actual / np.linalg.norm(actual, axis=1, keepdims=True)
    if actual.shape != expected.shape:
        raise OnnxUnavailableError(
            f"ONNX vectors have shape {actual.shape}, PyTorch's {expected.shape}"
        )
    diff = float(np.abs(actual - expected).max())
    if not diff <= TOLERANCE:  # also catches NaN
        raise OnnxUnavailableError(
            f"ONNX vectors differ from PyTorch's by {diff:.1e} (more than {TOLERANCE:.0e})"
        )
