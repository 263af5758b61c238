"""proofkit's ONNX side: schemas, tags, families, and running one node through onnx.reference."""

import numpy as np
import pytest

from proofkit import UnknownOperatorError, list_ops, op_info, run_onnx
from proofkit.families import FAMILIES, family_of, slug


def test_every_default_domain_op_is_listed_once_in_a_family():
    members = [op for ops in FAMILIES.values() for op in ops]
    assert len(members) == len(set(members))
    assert sorted(members) == list(list_ops())
    assert len(list_ops()) == 201  # onnx 1.23.2; a new onnx with new ops must place them in a family


def test_schema_reads_tags_optional_and_variadic():
    clip = op_info("Clip")
    assert clip.version == 13
    assert [(f.name, f.tag, f.arity) for f in clip.inputs] == [
        ("input", "Differentiable", "single"), ("min", "NonDifferentiable", "optional"),
        ("max", "NonDifferentiable", "optional")]
    assert op_info("Sum").inputs[0].variadic and op_info("Sum").input_name(7) == "data_0"
    assert op_info("Reshape").formal("shape").types == ("tensor(int64)",)
    assert {f.tag for f in op_info("Range").formals} == {"Unknown"}


def test_attribute_defaults_are_onnx_defaults():
    assert op_info("Softmax").with_defaults(None) == {"axis": -1}
    assert op_info("Reshape").with_defaults({"allowzero": 1}) == {"allowzero": 1}
    assert op_info("Shape").with_defaults({}) == {"start": 0}  # `end` has no default: absent means "to the end"
    with pytest.raises(ValueError, match="no attribute 'axes'.*axis"):
        op_info("Softmax").with_defaults({"axes": 0})


def test_unknown_op_name_lists_close_names():
    with pytest.raises(UnknownOperatorError, match=r"'Matmul' is not an operator.*Did you mean MatMul"):
        op_info("Matmul")
    with pytest.raises(UnknownOperatorError, match="Did you mean Softmax"):
        op_info("SoftMax")
    with pytest.raises(UnknownOperatorError, match="not an operator"):
        op_info("Frobnicate")


def test_wrong_number_of_inputs_is_a_clear_error():
    with pytest.raises(ValueError, match=r"Add-14 takes 2 inputs \(A, B\); got 3"):
        run_onnx("Add", [np.ones(2)] * 3)
    with pytest.raises(ValueError, match=r"Clip-13 takes 1 to 3 inputs .*got 0"):
        run_onnx("Clip", [])


def test_run_onnx_keeps_dtype_and_handles_omitted_optional_inputs():
    x = np.array([-2.0, 0.5, 3.0], dtype=np.float32)
    (y,) = run_onnx("Clip", [x, None, np.array(1.0, dtype=np.float32)])
    assert y.dtype == np.float32 and y.tolist() == [-2.0, 0.5, 1.0]
    (s,) = run_onnx("Shape", [np.zeros((2, 3, 4))], {"start": 1})
    assert s.dtype == np.int64 and s.tolist() == [3, 4]


def test_family_slugs_are_file_names():
    assert slug("Shape, indexing and casting") == "shape-indexing-and-casting"
    assert family_of("Relu") == "Activations"
    with pytest.raises(KeyError):
        family_of("NotAnOp")


def test_outputs_that_exist_only_in_some_modes_are_not_asked_for():
    X, s = np.linspace(-1, 1, 24).reshape(2, 3, 4), np.ones(3)
    assert len(run_onnx("BatchNormalization", [X, s, s, 0 * s, s])) == 1  # inference: Y only
    assert len(run_onnx("BatchNormalization", [X, s, s, 0 * s, s], {"training_mode": 1})) == 3
    with pytest.raises(Exception, match="Unable to find output name"):
        run_onnx("BatchNormalization", [X, s, s, 0 * s, s], n_outputs=3)  # an explicit count is taken as asked


def test_a_function_body_typed_for_float32_only_runs_in_the_inputs_type():
    # MeanVarianceNormalization's body adds a float32 epsilon: onnx.reference rejects a double input; the kit runs the
    # body with the constant in the input's type, and float32 input still goes through onnx.reference's own path
    X = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    y = run_onnx("MeanVarianceNormalization", [X])[0]
    assert y.dtype == np.float64 and np.allclose(y.std(axis=(0, 2, 3)), 1.0)
    assert run_onnx("MeanVarianceNormalization", [X]).source == "the function body in the input's type"
    assert run_onnx("MeanVarianceNormalization", [X.astype(np.float32)]).source == "onnx.reference"
    y32 = run_onnx("MeanVarianceNormalization", [X.astype(np.float32)])[0]
    assert y32.dtype == np.float32 and np.abs(y - y32).max() < 1e-5
    assert np.allclose(run_onnx("MeanVarianceNormalization", [X], {"axes": [1]})[0].std(axis=1), 1.0)


def test_a_stand_in_runs_an_operator_onnx_reference_lacks_and_is_named_as_the_source():
    from proofkit import run_onnx, stand_in
    from proofkit import onnxrun
    with pytest.raises(ValueError, match="onnx.reference implements Relu"):
        stand_in("Relu", lambda inputs: [inputs[0]], "a stand-in")
    try:
        stand_in("GlobalLpPool", lambda inputs, p=2: [np.sum(np.abs(inputs[0]) ** p, axis=(2,), keepdims=True)
                                                      ** (1 / p)], "the spec's formula")
        y = run_onnx("GlobalLpPool", [np.array([[[3.0, -4.0]]])])
        assert y[0].tolist() == [[[5.0]]] and y.source == "the spec's formula"
    finally:
        onnxrun._STAND_INS.clear()


def _copy_body():
    from onnx import TensorProto as T, helper as h
    return h.make_graph([h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Identity", ["v"], ["v_out"]),
                         h.make_node("Constant", [], ["k"], value=h.make_tensor("k", T.DOUBLE, [], [2.0])),
                         h.make_node("Mul", ["v", "k"], ["s"])], "copy",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                         h.make_tensor_value_info("v", T.DOUBLE, [2])],
                        [h.make_tensor_value_info("c_out", T.BOOL, []),
                         h.make_tensor_value_info("v_out", T.DOUBLE, [2]), h.make_tensor_value_info("s", T.DOUBLE, [2])])


def test_a_node_holding_a_graph_returns_as_many_outputs_as_its_graph_gives():
    from proofkit.onnxrun import graph_outputs
    body = _copy_body()
    outs = run_onnx("Loop", [np.array(3, np.int64), np.array(True), np.array([1.0, -2.0])], {"body": body})
    assert len(outs) == 2 and outs[1].shape == (3, 2)  # v_final, and the scan output of three iterations
    np.testing.assert_array_equal(outs[1][2], [2.0, -4.0])
    assert graph_outputs("Loop", {"body": body}) == 2 and graph_outputs("Scan", {"body": body}) == 3
    assert graph_outputs("If", {"then_branch": body, "else_branch": body}) == 3
    assert graph_outputs("Loop", {}) is None and graph_outputs("Concat", {"axis": 0}) is None


def test_float32_graphs_converts_double_graphs_only():
    import onnx
    from proofkit.ortgrad import float32_graphs
    body = _copy_body()
    got = float32_graphs({"body": body, "num_scan_inputs": 1})
    assert got["num_scan_inputs"] == 1
    g = got["body"]
    assert [v.type.tensor_type.elem_type for v in g.input] == [onnx.TensorProto.INT64, onnx.TensorProto.BOOL,
                                                              onnx.TensorProto.FLOAT]
    assert g.node[2].attribute[0].t.data_type == onnx.TensorProto.FLOAT
    assert body.input[2].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE  # the original is left as it was


def test_ort_gradient_of_a_node_holding_a_double_graph_reaches_onnx_runtimes_builder():
    """The graph is given to ONNX Runtime in float32, as the inputs are: ONNX Runtime 1.19.2's own answer (no builder
    for Loop) comes back, for float64 and float32 inputs alike, not a type error of the double body."""
    from proofkit.ortgrad import NoGradientBuilder, ort_gradient
    for dtype in (np.float64, np.float32):
        with pytest.raises(NoGradientBuilder, match="has no gradient builder for Loop"):
            ort_gradient("Loop", [np.array(2, np.int64), np.array(True), np.array([1.0, -2.0], dtype)],
                         [np.ones(2), np.ones((2, 2))], {"body": _copy_body()})


def test_onnxruntime_imports_without_the_ortmodule_probe_and_the_probe_would_fail_anyway():
    """proofkit answers onnxruntime's import-time ORTModule probe "not installed" (proofkit.ortgrad): the answer the
    probe itself reaches with these pins, checked here in a clean process, without the cost of getting there."""
    import subprocess
    import sys
    probe = ("try:\n from onnxruntime.training.ortmodule import ORTModule\n print('loads')\n"
             "except ImportError:\n print('fails')\n")
    alone = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert alone.stdout.strip().endswith("fails"), alone.stdout + alone.stderr[-500:]
    kit = ("import sys, numpy as np, proofkit, onnxruntime\n"
           "print(onnxruntime.__version__, 'torch.onnx' in sys.modules)\n"
           "print(proofkit.ort_gradient('Sin', [np.zeros(2)], [np.ones(2)])[0].tolist())\n")
    run = subprocess.run([sys.executable, "-c", kit], capture_output=True, text=True, timeout=300)
    assert run.stdout.split("\n")[:2] == ["1.19.2 False", "[1.0, 1.0]"], run.stdout + run.stderr[-500:]
