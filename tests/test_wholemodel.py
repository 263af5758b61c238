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


def test_as_float32_converts_the_graphs_nodes_hold():
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Tanh", ["v"], ["v_out"])], "b",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                         h.make_tensor_value_info("v", T.DOUBLE, [2])],
                        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.DOUBLE, [2])])
    g = h.make_graph([h.make_node("Loop", ["M", "", "x"], ["y"], body=body)], "loop",
                     [h.make_tensor_value_info("x", T.DOUBLE, [2])], [h.make_tensor_value_info("y", T.DOUBLE, [2])],
                     initializer=[nh.from_array(np.array(2, np.int64), "M")])
    m32 = wm.as_float32(h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)]))
    inner = m32.graph.node[0].attribute[0].g
    assert [v.type.tensor_type.elem_type for v in inner.input] == [T.INT64, T.BOOL, T.FLOAT]
    assert inner.output[1].type.tensor_type.elem_type == T.FLOAT
    assert m32.graph.initializer[0].data_type == T.INT64  # an integer stays as it is
    assert body.input[2].type.tensor_type.elem_type == T.DOUBLE  # the model given is not changed


def _through_sequence(direct=True):
    """x -> SequenceConstruct -> SequenceAt(0) -> e; y = e * x (direct) or y = e * e, doubles."""
    nodes = [h.make_node("SequenceConstruct", ["x"], ["s"]), h.make_node("SequenceAt", ["s", "i"], ["e"]),
             h.make_node("Mul", ["e", "x" if direct else "e"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.DOUBLE, [3])],
                     [h.make_tensor_value_info("y", T.DOUBLE, [3])], [nh.from_array(np.array(0, np.int64), "i")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)


def test_a_wrong_gradient_in_a_model_is_recorded_and_a_right_or_missing_one_fails():
    from proofkit.evidence import recorded

    x = np.array([1.0, 2.0, 3.0])
    res = wm.check_model_ort_defect("SequenceConstruct", "inputs", _through_sequence(), {"x": x}, {"y": np.ones(3)},
                                    {"x": 2 * x}, reason="drops the sequence edge", vjp=None)
    assert res.outcome == "differs (declared)" and "[1.0, 2.0, 3.0]" in res.notes
    rec = [r for r in recorded("SequenceConstruct") if r.kind == "ort-differs"][-1]
    assert rec.name == "inputs" and rec.data["what"] == "wrong value" and rec.detail == "drops the sequence edge"
    # negative: the same model with the gradient ONNX Runtime gives declared as the proof's: no departure, it fails
    with pytest.raises(AssertionError, match="gone"):
        wm.check_model_ort_defect("SequenceConstruct", "inputs", _through_sequence(), {"x": x}, {"y": np.ones(3)},
                                  {"x": x}, reason="r", vjp=None)
    # negative: no path but the sequence edge: ONNX Runtime gives no gradient, which is no wrong value
    with pytest.raises(AssertionError, match="gave none"):
        wm.check_model_ort_defect("SequenceConstruct", "inputs", _through_sequence(False), {"x": x},
                                  {"y": np.ones(3)}, {"x": 2 * x}, reason="r", vjp=None)
    with pytest.raises(ValueError):
        wm.check_model_ort_defect("SequenceConstruct", "inputs", _through_sequence(), {"x": x}, {"y": np.ones(3)},
                                  {"x": 2 * x}, reason="", vjp=None)
