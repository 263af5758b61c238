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
