"""Whole models against every engine (proofkit.wholemodel) and the models of book/backward-pass (proofkit.zoo)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from proofkit import wholemodel as wm
from proofkit import zoo
from proofkit.reverse import gradients

OPSET = onnx.defs.onnx_opset_version()


def small(op="Tanh", **attrs):
    g = h.make_graph([h.make_node("MatMul", ["x", "W"], ["z"]), h.make_node(op, ["z"], ["y"], **attrs)], "s",
                     [h.make_tensor_value_info("x", T.DOUBLE, [2, 3])],
                     [h.make_tensor_value_info("y", T.DOUBLE, [2, 2])],
                     initializer=[nh.from_array(np.arange(6.0).reshape(3, 2) / 7, "W")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])


def test_rewrites_keep_the_model_meaning():
    m = small()
    moved = wm.with_parameters_as_inputs(m, ["W"])
    assert [v.name for v in moved.graph.input] == ["x", "W"] and not moved.graph.initializer
    m32 = wm.as_float32(m)
    assert m32.graph.initializer[0].data_type == T.FLOAT and m32.graph.input[0].type.tensor_type.elem_type == T.FLOAT
    ln = h.make_graph([h.make_node("LayerNormalization", ["x", "s"], ["y"])], "ln",
                      [h.make_tensor_value_info("x", T.DOUBLE, [2, 3])],
                      [h.make_tensor_value_info("y", T.DOUBLE, [2, 3])],
                      initializer=[nh.from_array(np.ones(3), "s")])
    named = wm.with_optional_outputs(h.make_model(ln, opset_imports=[h.make_opsetid("", OPSET)]))
    assert list(named.graph.node[0].output) == ["y", "LayerNormalization_0_Mean", "LayerNormalization_0_InvStdDev"]


def test_engines_agree_on_a_smooth_model_and_a_wrong_gradient_is_seen():
    m = small()
    x = np.array([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]])
    book, rows = wm.compare(m, {"x": x}, twin=lambda v: {"y": __import__("torch").tanh(v["x"] @ v["W"])})
    by = {r.engine: r for r in rows}
    assert by["finite differences"].difference < 1e-8 and by["PyTorch"].difference < 1e-12
    assert by["ONNX Runtime"].difference < 1e-5 and by["onnx-ad (onnx.reference)"].difference < 1e-12
    wrong = {p: g * 1.001 for p, g in book.grads.items()}
    assert wm.relative_difference(wrong, book.grads) > 1e-4
    pairs = wm.fd_directions(m, {"x": x}, {"y": np.ones((2, 2))}, wrong)
    assert max(abs(f - r) / abs(f) for f, r in pairs) > 1e-4


def test_refusals_are_engine_refused_with_the_engines_words():
    m = small("Round")  # ONNX Runtime has no gradient for Round; onnx-ad's adjoint gives it none either
    x = np.ones((2, 3))
    with pytest.raises(wm.EngineRefused, match="ONNX Runtime .* could not build"):
        wm.ort_model_gradient(m, {"x": x}, {"y": np.ones((2, 2))}, ["x", "W"])
    assert "does not match expected type" in wm.ort_double_refusal(small(), {"x": x}, {"y": np.ones((2, 2))},
                                                                     ["x", "W"])


def test_localize_names_the_node_whose_rule_differs():
    case = zoo.cnn()
    book = gradients(case.model, case.feeds, case.cotangents)
    found = wm.localize(case.model, case.feeds, case.cotangents, book, "onnx-ad")
    assert [f.split(" at ")[0] for f in found] == ["BatchNormalization #1: input_mean",
                                                   "BatchNormalization #1: input_var"]


@pytest.mark.parametrize("case", zoo.cases(), ids=lambda c: c.name)
def test_every_twin_gives_the_models_outputs(case):
    case.check_twin()


def test_a_twin_that_differs_is_caught():
    case = zoo.mlp()
    real = case.twin
    case.twin = lambda v: {"loss": real(v)["loss"] * (1 + 1e-9)}
    with pytest.raises(AssertionError, match="MLP: the twin's loss"):
        case.check_twin()
