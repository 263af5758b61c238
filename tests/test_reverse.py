"""The book's reverse mode over whole models (proofkit.reverse) and its command (python -m proofkit grad)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from proofkit import reverse
from proofkit.__main__ import main as cli
from proofkit.reverse import ReverseModeError, gradients

OPSET = onnx.defs.onnx_opset_version()


def model(nodes, inputs, outputs, inits=(), opset=OPSET):
    graph = h.make_graph(nodes, "t", [h.make_tensor_value_info(n, T.DOUBLE, s) for n, s in inputs],
                         [h.make_tensor_value_info(n, T.DOUBLE, s) for n, s in outputs],
                         initializer=[nh.from_array(np.asarray(a), n) for n, a in inits])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def fd(m, feeds, name, eps=1e-6):
    """Central differences of the sum of the outputs, entry by entry of one parameter (small models only)."""
    from proofkit.reverse import objective
    base = feeds[name] if name in feeds else nh.to_array(next(t for t in m.graph.initializer if t.name == name))
    out = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        vals = []
        for s in (1, -1):
            x = base.copy()
            x[idx] += s * eps
            mm = onnx.ModelProto()
            mm.CopyFrom(m)
            if name in feeds:
                vals.append(objective(mm, {**feeds, name: x}, {}))
            else:
                keep = [t for t in mm.graph.initializer if t.name != name]
                del mm.graph.initializer[:]
                mm.graph.initializer.extend(keep + [nh.from_array(x, name)])
                vals.append(objective(mm, feeds, {}))
        out[idx] = (vals[0] - vals[1]) / (2 * eps)
    return out


def test_mlp_matches_finite_differences():
    rng = np.random.default_rng(0)
    inits = [("W1", rng.standard_normal((4, 3))), ("b1", rng.standard_normal(3)),
             ("W2", rng.standard_normal((3, 2))), ("b2", rng.standard_normal(2))]
    m = model([h.make_node("Gemm", ["x", "W1", "b1"], ["h"]), h.make_node("Tanh", ["h"], ["r"]),
               h.make_node("Gemm", ["r", "W2", "b2"], ["z"]), h.make_node("LogSoftmax", ["z"], ["ls"], axis=1),
               h.make_node("ReduceMean", ["ls"], ["loss"], keepdims=0)], [("x", [3, 4])], [("loss", [])], inits)
    feeds = {"x": rng.standard_normal((3, 4))}
    g = gradients(m, feeds)
    assert set(g.grads) == {"x", "W1", "b1", "W2", "b2"}
    for name in g.grads:
        np.testing.assert_allclose(g[name], fd(m, feeds, name), rtol=1e-6, atol=1e-8)


def test_value_used_twice_sums_cotangents_and_cotangent_given():
    x = np.array([1.0, -2.0, 3.0])
    m = model([h.make_node("Mul", ["x", "x"], ["y"])], [("x", [3])], [("y", [3])])
    np.testing.assert_array_equal(gradients(m, {"x": x})["x"], 2 * x)
    cot = np.array([1.0, 0.0, 2.0])
    np.testing.assert_array_equal(gradients(m, {"x": x}, {"y": cot})["x"], 2 * x * cot)
    with pytest.raises(ReverseModeError, match="cotangent of y has shape"):
        gradients(m, {"x": x}, {"y": np.ones(2)})
    with pytest.raises(ReverseModeError, match="not graph outputs: z"):
        gradients(m, {"x": x}, {"z": np.ones(3)})


def test_omitted_optional_and_integer_inputs_get_nothing():
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    m = model([h.make_node("Clip", ["x", "", "hi"], ["c"]), h.make_node("Reshape", ["c", "shape"], ["y"])],
              [("x", [2, 2])], [("y", [4])], [("hi", np.array(2.0)), ("shape", np.array([4], np.int64))])
    g = gradients(m, {"x": x})
    np.testing.assert_array_equal(g["x"], [[1.0, 1.0], [0.0, 1.0]])  # 3 > hi: clipped
    np.testing.assert_array_equal(g["hi"], 1.0)
    assert "shape" not in g.grads


def test_parameter_the_outputs_do_not_depend_on_gets_zeros():
    m = model([h.make_node("Identity", ["x"], ["y"]), h.make_node("Neg", ["u"], ["v"])],
              [("x", [2]), ("u", [2])], [("y", [2])])
    g = gradients(m, {"x": np.ones(2), "u": np.ones(2)})
    np.testing.assert_array_equal(g["u"], 0.0)


def test_path_only_through_a_non_differentiable_node_is_an_error_naming_it():
    m = model([h.make_node("Round", ["x"], ["r"], name="rounding"), h.make_node("Exp", ["r"], ["y"])],
              [("x", [2])], [("y", [2])])
    with pytest.raises(ReverseModeError, match=r"only through .*Round 'rounding' #0 -> r"):
        gradients(m, {"x": np.array([0.3, 1.7])})


def test_path_through_a_discrete_value_is_an_error_naming_the_node():
    m = model([h.make_node("Greater", ["x", "z"], ["b"]), h.make_node("Cast", ["b"], ["y"], to=T.DOUBLE)],
              [("x", [2])], [("y", [2])], [("z", np.zeros(2))])
    with pytest.raises(ReverseModeError, match=r"Cast #1 -> y \(its input b is bool, discrete\)"):
        gradients(m, {"x": np.array([0.3, -1.0])}, wrt=["x"])


def test_partly_cut_parameter_lists_the_cut_node():
    m = model([h.make_node("Round", ["x"], ["r"]), h.make_node("Add", ["r", "x"], ["y"])], [("x", [2])], [("y", [2])])
    g = gradients(m, {"x": np.array([0.3, 1.2])})
    np.testing.assert_array_equal(g["x"], 1.0)
    assert g.cuts["x"] == ["Round #0 -> r (its chapter proves no input differentiable)"]


def test_refusals_name_the_node(monkeypatch, tmp_path):
    x = {"x": np.ones(2)}
    other = model([h.make_node("Relu", ["x"], ["y"], domain="com.example")], [("x", [2])], [("y", [2])])
    other.opset_import.append(h.make_opsetid("com.example", 1))
    with pytest.raises(ReverseModeError, match="Relu #0 -> y is of domain 'com.example'"):
        gradients(other, x)
    old = model([h.make_node("Relu", ["x"], ["y"])], [("x", [2])], [("y", [2])], opset=12)
    with pytest.raises(ReverseModeError,
                       match="Relu #0 -> y is Relu-6 at the model's opset 12; the book proves Relu-14"):
        gradients(old, x)
    np.testing.assert_array_equal(gradients(reverse.upgrade(old), x)["x"], 1.0)
    monkeypatch.setattr(reverse, "chapter_path", lambda op: tmp_path / f"{op}.ipynb")
    reverse.rule_of.cache_clear()
    try:
        with pytest.raises(ReverseModeError, match="Relu #0 -> y: Relu has no chapter in the book yet"):
            gradients(model([h.make_node("Relu", ["x"], ["y"])], [("x", [2])], [("y", [2])]), x)
    finally:
        reverse.rule_of.cache_clear()


def _if_model():
    then = h.make_graph([h.make_node("Mul", ["x", "x"], ["o"])], "then", [],
                        [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    other = h.make_graph([h.make_node("Neg", ["x"], ["o"])], "else", [], [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    return model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [("x", [2])], [("y", [2])],
                 [("c", np.array(True))])


def test_a_nested_graph_goes_through_its_chapter_rule_with_the_outer_values(monkeypatch):
    """The protocol for graph attributes: the rule gets outer={name: value} and returns (grads, outer grads), and
    graph_vjp runs the reverse mode inside the branch (here a stand-in for If's rule)."""
    calls = []

    def if_rule(inputs, cotangents, outer=None, *, then_branch, else_branch):
        branch = then_branch if bool(inputs[0]) else else_branch
        inner = reverse.graph_vjp(branch, outer, cotangents)
        calls.append(sorted(outer))
        return [None], {n: inner[n] for n in outer}

    real = reverse.rule_of
    monkeypatch.setattr(reverse, "rule_of", lambda op: if_rule if op == "If" else real(op))
    x = np.array([1.5, -2.0])
    np.testing.assert_array_equal(gradients(_if_model(), {"x": x})["x"], 2 * x)
    assert calls == [["x"]]


def test_a_nested_graph_without_its_chapter_is_an_error_naming_the_node(monkeypatch, tmp_path):
    real = reverse.chapter_path
    monkeypatch.setattr(reverse, "chapter_path", lambda op: tmp_path / "If.ipynb" if op == "If" else real(op))
    reverse.rule_of.cache_clear()
    try:
        with pytest.raises(ReverseModeError, match="If #0 -> y: If has no chapter in the book yet"):
            gradients(_if_model(), {"x": np.ones(2)})
    finally:
        reverse.rule_of.cache_clear()


def test_graph_vjp_gives_formal_inputs_outer_values_and_none_through_discrete_values():
    body = h.make_graph([h.make_node("Mul", ["a", "w"], ["p"]), h.make_node("Round", ["a"], ["r"]),
                         h.make_node("Add", ["p", "r"], ["o"])], "body",
                        [h.make_tensor_value_info("a", T.DOUBLE, [2])], [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    env = {"a": np.array([0.25, 2.0]), "w": np.array([3.0, -1.0])}
    g = reverse.graph_vjp(body, env, [np.array([1.0, 2.0])])
    np.testing.assert_array_equal(g["a"], [3.0, -2.0])  # through Mul; Round contributes nothing
    np.testing.assert_array_equal(g["w"], [0.25, 4.0])
    only_round = h.make_graph([h.make_node("Round", ["a"], ["o"])], "b", [h.make_tensor_value_info("a", T.DOUBLE, [2])],
                              [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    assert reverse.graph_vjp(only_round, env, [np.ones(2)])["a"] is None


def test_bad_models_are_clear_errors(tmp_path):
    with pytest.raises(ReverseModeError, match="no model file"):
        gradients(tmp_path / "missing.onnx", {})
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(ReverseModeError, match="is not an ONNX model"):
        gradients(junk, {})
    broken = model([h.make_node("Relu", ["nowhere"], ["y"])], [("x", [2])], [("y", [2])])
    with pytest.raises(ReverseModeError, match="fails onnx.checker"):
        gradients(broken, {"x": np.ones(2)})
    with pytest.raises(ReverseModeError, match="no value fed for the graph input"):
        gradients(model([h.make_node("Relu", ["x"], ["y"])], [("x", [2])], [("y", [2])]), {})


def test_command_writes_gradients_and_checks(tmp_path, capsys):
    rng = np.random.default_rng(1)
    m = model([h.make_node("MatMul", ["x", "W"], ["z"]), h.make_node("Softplus", ["z"], ["y"])], [("x", [2, 3])],
              [("y", [2, 2])], [("W", rng.standard_normal((3, 2)))])
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    x = rng.standard_normal((2, 3))
    cot = rng.standard_normal((2, 2))
    np.savez(tmp_path / "in.npz", x=x, y=cot)
    assert cli(["grad", str(path), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "g.npz"),
                "--check"]) == 0
    text = capsys.readouterr().out
    assert "check passed" in text and "operators without a chapter: none" in text
    with np.load(tmp_path / "g.npz") as g:
        W = nh.to_array(m.graph.initializer[0])
        s = 1 / (1 + np.exp(-(x @ W))) * cot
        np.testing.assert_allclose(g["W"], x.T @ s, rtol=1e-12)
        np.testing.assert_allclose(g["x"], s @ W.T, rtol=1e-12)
    np.savez(tmp_path / "bad.npz", q=x)
    assert cli(["grad", str(path), "--inputs", str(tmp_path / "bad.npz")]) == 2
    assert "neither graph inputs" in capsys.readouterr().err
    assert cli(["grad", str(tmp_path / "absent.onnx")]) == 2
    assert "no model file" in capsys.readouterr().err


def test_control_flow_goes_through_the_if_and_loop_chapters():
    """If and Loop differentiate their graphs with the other chapters' rules (reverse.graph_vjp), outer values
    included: the whole model's gradient matches finite differences."""
    then = h.make_graph([h.make_node("Mul", ["x", "w"], ["t"]), h.make_node("Tanh", ["t"], ["o"])], "then", [],
                        [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    other = h.make_graph([h.make_node("Sub", ["x", "w"], ["o"])], "else", [],
                         [h.make_tensor_value_info("o", T.DOUBLE, [2])])
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Mul", ["v", "w"], ["p"]),
                         h.make_node("Sin", ["p"], ["v_out"])], "body",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, []),
                         h.make_tensor_value_info("v", T.DOUBLE, [2])],
                        [h.make_tensor_value_info("c_out", T.BOOL, []),
                         h.make_tensor_value_info("v_out", T.DOUBLE, [2])])
    m = model([h.make_node("If", ["c"], ["y0"], then_branch=then, else_branch=other),
               h.make_node("Loop", ["n", "go", "y0"], ["y"], body=body)],  # cond given: see proofs/Loop
              [("x", [2])], [("y", [2])],
              [("c", np.array(True)), ("w", np.array([0.5, -1.5])), ("n", np.array(3, np.int64)),
               ("go", np.array(True))])
    x = np.array([0.3, -0.7])
    g = gradients(m, {"x": x})
    np.testing.assert_allclose(g["x"], fd(m, {"x": x}, "x"), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g["w"], fd(m, {"x": x}, "w"), rtol=1e-6, atol=1e-9)
