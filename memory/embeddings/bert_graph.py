"""Build a BERT encoder as an ONNX graph straight from its weights, without torch.

The graph is the Hugging Face `BertModel` forward pass for single-sentence inputs, written with
standard ONNX operators (opset 17): word + position + token-type-0 embeddings, LayerNorm, then
per layer self-attention with an additive padding mask, a dense output + residual + LayerNorm,
an exact-erf GELU feed-forward + residual + LayerNorm. Inputs are `input_ids` and
`attention_mask` (int64, batch x sequence); the output is `last_hidden_state` (float32, batch x
sequence x hidden). ONNX Runtime fuses the bias-GELU and the attention scaling when it loads it.
This module only builds bytes; it must not run, cache or tokenise anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

OPSET = 17
"""ONNX opset of the graph (LayerNormalization is a standard operator from 17 on)."""

Weights = Mapping[str, npt.NDArray[Any]]


@dataclass(frozen=True)
class BertShape:
    """The hyper-parameters of a BERT checkpoint the graph needs (from its config.json)."""

    hidden: int
    heads: int
    layers: int
    eps: float


class MissingWeightError(KeyError):
    """The checkpoint lacks a tensor the BERT graph needs (not a BERT checkpoint, or damaged)."""


def _weight(weights: Weights, name: str) -> npt.NDArray[np.float32]:
    try:
        array = weights[name]
    except KeyError:
        raise MissingWeightError(name) from None
    return np.ascontiguousarray(array, dtype=np.float32)


def build_bert_graph(weights: Weights, shape: BertShape) -> bytes:
    """Serialise the ONNX model of the BERT encoder whose tensors `weights` holds."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads = shape.hidden, shape.heads
    head_dim = hidden // heads
    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: npt.NDArray[Any]) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def layer_norm(x: str, prefix: str) -> str:
        gamma = const(f"{prefix}.weight", _weight(weights, f"{prefix}.weight"))
        beta = const(f"{prefix}.bias", _weight(weights, f"{prefix}.bias"))
        return node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=shape.eps)

    def dense(x: str, name: str, kernel: npt.NDArray[Any], bias: npt.NDArray[Any]) -> str:
        # torch's Linear stores (out, in); MatMul wants (in, out).
        product = node("MatMul", [x, const(f"{name}.kernel", kernel.T)])
        return node("Add", [product, const(f"{name}.bias", bias)])

    def linear(x: str, prefix: str) -> str:
        kernel = _weight(weights, f"{prefix}.weight")
        return dense(x, prefix, kernel, _weight(weights, f"{prefix}.bias"))

    # Embeddings. Every text is one sentence, so its token types are all 0: that row is folded
    # into the position table.
    words = const("word_embeddings", _weight(weights, "embeddings.word_embeddings.weight"))
    types = _weight(weights, "embeddings.token_type_embeddings.weight")
    table = _weight(weights, "embeddings.position_embeddings.weight") + types[0]
    positions = const("position_embeddings", table)
    length = node(
        "Slice",
        [
            node("Shape", ["input_ids"]),
            const("one_i64", np.array([1], np.int64)),
            const("two_i64", np.array([2], np.int64)),
        ],
    )
    used = node("Slice", [positions, const("zero_i64", np.array([0], np.int64)), length])
    x = layer_norm(
        node("Add", [node("Gather", [words, "input_ids"], axis=0), used]), "embeddings.LayerNorm"
    )

    # Padding positions get the most negative float added to their attention scores, as
    # transformers does, so softmax gives them exactly zero weight.
    one = const("one_f32", np.array(1.0, np.float32))
    keep = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    lowest = const("lowest_f32", np.array(np.finfo(np.float32).min, np.float32))
    mask = node("Mul", [node("Sub", [one, keep]), lowest])
    mask = node("Unsqueeze", [mask, const("axes_1_2", np.array([1, 2], np.int64))])
    split_heads = const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("attention_scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    half = const("half_f32", np.array(0.5, np.float32))
    sqrt2 = const("sqrt2_f32", np.array(np.sqrt(2.0), np.float32))
    thirds = const("qkv_sizes", np.array([hidden, hidden, hidden], np.int64))

    for i in range(shape.layers):
        prefix = f"encoder.layer.{i}"
        attn = f"{prefix}.attention.self"
        # One MatMul for query, key and value, split afterwards.
        kernel = np.concatenate(
            [_weight(weights, f"{attn}.{p}.weight") for p in ("query", "key", "value")]
        )
        bias = np.concatenate(
            [_weight(weights, f"{attn}.{p}.bias") for p in ("query", "key", "value")]
        )
        qkv = dense(x, f"{attn}.qkv", kernel, bias)
        q, k, v = (f"{prefix}.{p}" for p in "qkv")
        nodes.append(helper.make_node("Split", [qkv, thirds], [q, k, v], axis=-1))
        q = node("Transpose", [node("Reshape", [q, split_heads])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [k, split_heads])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, split_heads])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), mask])
        context = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        context = node("Reshape", [node("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        attended = node("Add", [linear(context, f"{prefix}.attention.output.dense"), x])
        x = layer_norm(attended, f"{prefix}.attention.output.LayerNorm")
        # GELU with erf, as BERT's "gelu" activation (not the tanh approximation).
        inner = linear(x, f"{prefix}.intermediate.dense")
        gate = node("Add", [node("Erf", [node("Div", [inner, sqrt2])]), one])
        activated = node("Mul", [node("Mul", [inner, half]), gate])
        out = node("Add", [linear(activated, f"{prefix}.output.dense"), x])
        x = layer_norm(out, f"{prefix}.output.LayerNorm")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "bert_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in INPUTS],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="mneme"
    )
    model.ir_version = 8  # what every onnxruntime of the last years reads
    data: bytes = model.SerializeToString()
    return data


INPUTS = ("input_ids", "attention_mask")
"""The graph's inputs, both int64 (batch, sequence)."""


def metadata_suffix(values: Mapping[str, str]) -> bytes:
    """Serialised model metadata to append to a serialised model.

    Protocol buffers merge concatenated messages, so `model_bytes + metadata_suffix(...)` is the
    same model with these `metadata_props` added, without serialising ~90 MB of weights again.
    """
    from onnx import ModelProto, StringStringEntryProto

    extra = ModelProto(
        metadata_props=[StringStringEntryProto(key=k, value=v) for k, v in values.items()]
    )
    data: bytes = extra.SerializeToString()
    return data
