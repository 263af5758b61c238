"""The whole models the book differentiates (book/backward-pass and bench/reverse_mode.py), each built with
onnx.helper in float64 with seeded weights, with a PyTorch twin that computes the same outputs from the same values.

A twin takes `values` (every graph input and initializer by name, as torch tensors) and returns the outputs by name.
The twins are written from the ONNX definitions (gate order iofc for LSTM, the erf form of Gelu, LayerNormalization's
biased variance): `Case.check_twin` asserts that each gives the ONNX model's outputs before any gradient is compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
import onnx.defs
from onnx import TensorProto, helper, numpy_helper

OPSET = onnx.defs.onnx_opset_version()


@dataclass
class Case:
    name: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    twin: Callable
    about: str
    cotangents: dict = field(default_factory=dict)
    #: how close the twin's outputs are to onnx.reference's, and why where it is not 1e-12
    twin_rtol: float = 1e-12
    #: the step of the finite differences of onnx.reference (larger where onnx.reference rounds to float32)
    fd_eps: float = 1e-6
    #: the largest relative difference the finite differences may show against an exact gradient
    fd_rtol: float = 1e-7
    note: str = ""

    def check_twin(self) -> None:
        """The twin's outputs equal onnx.reference's on the case's inputs (else AssertionError naming the output)."""
        import torch

        from .reverse import forward

        values = forward(self.model, self.feeds)
        tv = {k: torch.tensor(np.asarray(v)) for k, v in values.items()
              if k in {t.name for t in self.model.graph.initializer} | set(self.feeds)}
        got = self.twin(tv)
        for o in self.model.graph.output:
            np.testing.assert_allclose(got[o.name].detach().numpy(), values[o.name], rtol=self.twin_rtol, atol=1e-12,
                                       err_msg=f"{self.name}: the twin's {o.name}")


def _model(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                               for n, a in inputs.items()],
                              [helper.make_tensor_value_info(n, TensorProto.DOUBLE, s) for n, s in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def mlp(seed: int = 0) -> Case:
    """Gemm, Relu, Gemm, SoftmaxCrossEntropyLoss (mean over the batch)."""
    import torch

    rng = np.random.default_rng(seed)
    inits = {"W1": rng.standard_normal((6, 8)) / 2, "b1": rng.standard_normal(8) / 4,
             "W2": rng.standard_normal((8, 3)) / 2, "b2": rng.standard_normal(3) / 4}
    feeds = {"x": rng.standard_normal((4, 6)), "labels": np.array([0, 2, 1, 2], np.int64)}
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["z"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["z", "labels"], ["loss"], reduction="mean")]

    def twin(v):
        z = torch.relu(v["x"] @ v["W1"] + v["b1"]) @ v["W2"] + v["b2"]
        return {"loss": torch.nn.functional.cross_entropy(z, v["labels"])}

    return Case("MLP", _model("mlp", nodes, feeds, [("loss", [])], inits), feeds, twin,
                "Gemm, Relu, Gemm, SoftmaxCrossEntropyLoss")


def cnn(seed: int = 0) -> Case:
    """Conv, BatchNormalization (inference), Relu, MaxPool, GlobalAveragePool, Flatten, Gemm."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(seed)
    inits = {"Wc": rng.standard_normal((3, 2, 3, 3)) / 3, "Bc": rng.standard_normal(3) / 4,
             "gamma": 1 + rng.standard_normal(3) / 4, "beta": rng.standard_normal(3) / 4,
             "mean": rng.standard_normal(3) / 4, "var": 1 + rng.random(3),
             "Wf": rng.standard_normal((3, 2)), "bf": rng.standard_normal(2) / 4}
    feeds = {"x": rng.standard_normal((2, 2, 6, 6))}
    nodes = [helper.make_node("Conv", ["x", "Wc", "Bc"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], epsilon=1e-5),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "Wf", "bf"], ["y"])]

    def twin(v):
        c = F.conv2d(v["x"], v["Wc"], v["Bc"], padding=1)
        n = (c - v["mean"][:, None, None]) / torch.sqrt(v["var"][:, None, None] + 1e-5) * v["gamma"][:, None, None] \
            + v["beta"][:, None, None]
        p = F.max_pool2d(torch.relu(n), 2, 2)
        return {"y": p.mean(dim=(2, 3)) @ v["Wf"] + v["bf"]}

    return Case("CNN", _model("cnn", nodes, feeds, [("y", [2, 2])], inits), feeds, twin,
                "Conv, BatchNormalization (inference), Relu, MaxPool, GlobalAveragePool, Flatten, Gemm",
                {"y": np.random.default_rng(seed + 1).standard_normal((2, 2))})


def transformer(seed: int = 0) -> Case:
    """A pre-norm transformer block: LayerNormalization, MatMul (Q, K, V), Reshape and Transpose into 2 heads,
    MatMul, Mul by 1/√d, Softmax, MatMul, back, MatMul, Add (residual), LayerNormalization, MatMul, Add, Gelu, MatMul,
    Add (residual)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(seed)
    b, s, d, heads = 2, 4, 8, 2
    hd = d // heads
    w = {n: rng.standard_normal((d, d)) / np.sqrt(d) for n in ("Wq", "Wk", "Wv", "Wo")}
    inits = {**w, "g1": 1 + rng.standard_normal(d) / 4, "c1": rng.standard_normal(d) / 4,
             "g2": 1 + rng.standard_normal(d) / 4, "c2": rng.standard_normal(d) / 4,
             "W1": rng.standard_normal((d, 2 * d)) / np.sqrt(d), "b1": rng.standard_normal(2 * d) / 4,
             "W2": rng.standard_normal((2 * d, d)) / np.sqrt(2 * d), "b2": rng.standard_normal(d) / 4,
             "split": np.array([b, s, heads, hd], np.int64), "merge": np.array([b, s, d], np.int64),
             "scale": np.array(1 / np.sqrt(hd))}
    feeds = {"x": rng.standard_normal((b, s, d))}
    N = helper.make_node
    nodes = [N("LayerNormalization", ["x", "g1", "c1"], ["n1"], axis=-1),
             N("MatMul", ["n1", "Wq"], ["q0"]), N("MatMul", ["n1", "Wk"], ["k0"]), N("MatMul", ["n1", "Wv"], ["v0"]),
             N("Reshape", ["q0", "split"], ["q1"]), N("Reshape", ["k0", "split"], ["k1"]),
             N("Reshape", ["v0", "split"], ["v1"]),
             N("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]), N("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
             N("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
             N("MatMul", ["q", "kt"], ["s0"]), N("Mul", ["s0", "scale"], ["s1"]),
             N("Softmax", ["s1"], ["a"], axis=-1), N("MatMul", ["a", "v"], ["o0"]),
             N("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]), N("Reshape", ["o1", "merge"], ["o2"]),
             N("MatMul", ["o2", "Wo"], ["o3"]), N("Add", ["x", "o3"], ["r1"]),
             N("LayerNormalization", ["r1", "g2", "c2"], ["n2"], axis=-1),
             N("MatMul", ["n2", "W1"], ["f0"]), N("Add", ["f0", "b1"], ["f1"]), N("Gelu", ["f1"], ["f2"]),
             N("MatMul", ["f2", "W2"], ["f3"]), N("Add", ["f3", "b2"], ["f4"]), N("Add", ["r1", "f4"], ["y"])]

    def twin(v):
        def ln(t, g, c):
            return F.layer_norm(t, (d,), g, c, eps=1e-5)
        n1 = ln(v["x"], v["g1"], v["c1"])
        q, k, vv = ((n1 @ v[n]).reshape(b, s, heads, hd).transpose(1, 2) for n in ("Wq", "Wk", "Wv"))
        a = torch.softmax(q @ k.transpose(2, 3) * v["scale"], dim=-1)
        r1 = v["x"] + (a @ vv).transpose(1, 2).reshape(b, s, d) @ v["Wo"]
        f = F.gelu(ln(r1, v["g2"], v["c2"]) @ v["W1"] + v["b1"]) @ v["W2"] + v["b2"]
        return {"y": r1 + f}

    return Case("transformer block", _model("block", nodes, feeds, [("y", [b, s, d])], inits), feeds, twin,
                "LayerNormalization, MatMul, Reshape, Transpose, Mul, Softmax, Add, Gelu",
                {"y": np.random.default_rng(seed + 1).standard_normal((b, s, d))},
                twin_rtol=1e-6, fd_eps=1e-3, fd_rtol=1e-3,
                note="onnx.reference computes Gelu through its function body, whose Erf is math.erf rounded to "
                     "float32 (proofs/Gelu): the twin agrees to 1e-6, and the finite differences, with a step of 1e-3, "
                     "to 1e-3")


def recurrent(seed: int = 0) -> Case:
    """LSTM over a sequence of 3 (batch 2, input 3, hidden 4), its last hidden state through a Gemm head."""
    import torch

    rng = np.random.default_rng(seed)
    t, b, i, h = 3, 2, 3, 4
    inits = {"W": rng.standard_normal((1, 4 * h, i)) / 2, "R": rng.standard_normal((1, 4 * h, h)) / 2,
             "B": rng.standard_normal((1, 8 * h)) / 4, "h0": rng.standard_normal((1, b, h)) / 2,
             "Wf": rng.standard_normal((h, 2)), "axes": np.array([0], np.int64)}
    feeds = {"X": rng.standard_normal((t, b, i))}
    nodes = [helper.make_node("LSTM", ["X", "W", "R", "B", "", "h0"], ["Y", "Y_h"], hidden_size=h),
             helper.make_node("Squeeze", ["Y_h", "axes"], ["last"]),
             helper.make_node("Gemm", ["last", "Wf"], ["y"])]

    def twin(v):
        W, R, B = v["W"][0], v["R"][0], v["B"][0]
        ht, ct = v["h0"][0], torch.zeros(b, h, dtype=torch.float64)
        for step in range(t):
            z = v["X"][step] @ W.T + ht @ R.T + B[:4 * h] + B[4 * h:]
            gi, go, gf, gc = z[:, :h], z[:, h:2 * h], z[:, 2 * h:3 * h], z[:, 3 * h:]  # ONNX's gate order: iofc
            ct = torch.sigmoid(gf) * ct + torch.sigmoid(gi) * torch.tanh(gc)
            ht = torch.sigmoid(go) * torch.tanh(ct)
        return {"y": ht @ v["Wf"]}

    return Case("LSTM", _model("lstm", nodes, feeds, [("y", [b, 2])], inits), feeds, twin,
                "LSTM (initial_h as a parameter), Squeeze, Gemm",
                {"y": np.random.default_rng(seed + 1).standard_normal((b, 2))})


def kinks() -> Case:
    """A model that meets a kink, a tie and a clamp on purpose: Relu at exactly 0, MaxPool over a window whose
    maximum is tied, Clip exactly on its upper bound; then a weighted sum."""
    import torch
    import torch.nn.functional as F

    x = np.array([[[[0.0, -1.0, 2.0, 2.0],
                    [0.5, 0.0, 1.0, -3.0],
                    [1.5, 1.5, -2.0, 0.0],
                    [1.0, 0.25, 0.0, 0.0]]]])
    inits = {"w": np.array([[[[1.0, 0.75], [1.0, 2.0]]]]), "hi": np.array(1.5)}
    feeds = {"x": x}
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Mul", ["p", "w"], ["m"]), helper.make_node("Clip", ["m", "", "hi"], ["c"]),
             helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0)]

    def twin(v):
        m = F.max_pool2d(torch.relu(v["x"]), 2, 2) * v["w"]
        return {"y": torch.clamp(m, max=v["hi"]).sum()}

    return Case("kinks, ties and clamps", _model("kinks", nodes, feeds, [("y", [])], inits), feeds, twin,
                "Relu at 0, MaxPool with a tied window, Clip on its bound")


def cases() -> list[Case]:
    return [mlp(), cnn(), transformer(), recurrent(), kinks()]
