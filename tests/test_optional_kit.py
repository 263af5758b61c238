"""The kit's support for Optional and for values of an optional type: a stand-in for an implemented operator after a
recorded departure of onnx.reference, optional-typed inputs and outputs in the engine checks, the element type of an
empty sequence, ort_forward without attributes, and ONNX types in the tables."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from proofkit import (check_forward, check_reference_departure, check_vjp_fd, check_vjp_onnxad, check_vjp_ort,
                      ort_forward, recorded, run_onnx, stand_in)
from proofkit import onnxrun, values
from proofkit.checks import NOTHING_COMPARED, _attr_text
from proofkit.evidence import _reset
from proofkit.findings import Finding
from proofkit.onnxad import _model
from proofkit.ortgrad import OrtRunError, input_infos, optional_outputs, optional_positions, ort_gradient

X = np.array([0.0, 1.0, 2.0])
T3 = helper.make_tensor_type_proto(TensorProto.DOUBLE, [3])


@pytest.fixture(autouse=True)
def clean():
    _reset()
    onnxrun._STAND_INS.clear()
    yield
    _reset()
    onnxrun._STAND_INS.clear()


def _identity(inputs, **attrs):
    return [inputs[0] if inputs else None]


def _unwrapped(inputs, **attrs):
    """onnx.reference's Optional with the list it wraps its value in removed."""
    node = helper.make_node("Optional", ["x0"] if inputs else [], ["y0"], **attrs)
    (wrapped,) = ReferenceEvaluator(node).run(None, {"x0": inputs[0]} if inputs else {})
    return [wrapped[0]]


def _departure():
    return check_reference_departure("Optional", [X], spec=_identity, title="Optional wraps its value in a list",
                                     explanation="onnx.reference returns [x] for the optional holding x.",
                                     min_difference=1e-12)


def _vjp(inputs, cotangents, **attrs):
    return [cotangents[0]] if inputs else []


# --- b. a stand-in for an implemented operator, only after a recorded departure ---

def test_a_stand_in_for_an_implemented_operator_without_a_departure_is_refused():
    with pytest.raises(ValueError, match="onnx.reference implements Optional"):
        stand_in("Optional", _unwrapped, "the spec")
    assert "Optional" not in onnxrun._STAND_INS


def test_a_departure_of_another_operator_or_component_does_not_open_the_stand_in():
    other = Finding("Erf", "t", "e", "x", "Y", None, "a", "b", None)
    with pytest.raises(ValueError, match="must be a Finding of onnx.reference for Optional"):
        stand_in("Optional", _unwrapped, "the spec", departure=other)
    runtime = Finding("Optional", "t", "e", "x", "output", None, "a", "b", None, "ONNX Runtime 1.19.2")
    with pytest.raises(ValueError, match="must be a Finding of onnx.reference"):
        stand_in("Optional", _unwrapped, "the spec", departure=runtime)
    assert "Optional" not in onnxrun._STAND_INS


def test_a_finding_that_was_not_recorded_in_this_process_does_not_open_the_stand_in():
    finding = _departure()
    _reset()  # the record is gone: a Finding object alone is no recorded departure
    with pytest.raises(ValueError, match="not recorded in this process"):
        stand_in("Optional", _unwrapped, "the spec", departure=finding)


def test_after_the_recorded_departure_the_stand_in_runs_the_node_for_every_check():
    wrapped = run_onnx("Optional", [X])  # onnx.reference's departure: a list holding the value
    assert isinstance(wrapped[0], list) and np.array_equal(wrapped[0][0], X)
    finding = _departure()
    assert any(r.kind == "reference-departure" for r in recorded("Optional"))
    stand_in("Optional", _unwrapped, "onnx.reference's Optional, unwrapped", departure=finding)
    y = run_onnx("Optional", [X])
    assert np.array_equal(y[0], X) and y.source == "onnx.reference's Optional, unwrapped"
    seq = [X, X[:2]]
    assert [e.tolist() for e in run_onnx("Optional", [seq])[0]] == [[0.0, 1.0, 2.0], [0.0, 1.0]]
    assert run_onnx("Optional", [], {"type": T3})[0] is None
    res = check_forward("Optional", _identity, [X])
    assert res.compared and "onnx.reference's Optional, unwrapped" in res.notes
    assert check_vjp_fd("Optional", _vjp, [seq]).compared
    with pytest.raises(AssertionError):  # a wrong rule is caught through the stand-in
        check_vjp_fd("Optional", lambda i, g, **a: [2 * g[0]], [X])


# --- a. an optional output is read through OptionalGetElement before the loss ---

def test_optional_outputs_come_from_the_schema():
    assert optional_outputs("Optional") == {0}
    assert optional_outputs("Relu") == set() and optional_outputs("OptionalGetElement") == set()


def test_ort_reads_an_optional_output_through_optional_get_element():
    stand_in("Optional", _unwrapped, "unwrapped", departure=_departure())
    res = check_vjp_ort("Optional", _vjp, [X])
    # the model loads: ONNX Runtime's answer is about the gradient (no edge through Optional), not a type error
    assert res.outcome == NOTHING_COMPARED and "unreachable from the output" in res.notes
    assert "is invalid" not in res.notes
    assert {r.kind for r in recorded("Optional") if r.name == "input"} == {"ort-none"}


def test_without_the_stand_in_the_sequence_of_one_still_reaches_sequence_at():
    # default behaviour unchanged: onnx.reference's [x] is a sequence output, read by SequenceAt, which ONNX
    # Runtime's checker refuses on Optional's output (the model is wrong, which is why the chapter needs the stand-in)
    from proofkit.ortgrad import NoGradientBuilder
    with pytest.raises(NoGradientBuilder, match="SequenceAt"):
        ort_gradient("Optional", [X], [[np.ones(3)]])


def test_onnxad_declares_an_optional_output_and_an_optional_input():
    model, _ = _model("Optional", [X], [X], {})
    assert model.graph.output[0].type.HasField("optional_type")
    model, _ = _model("OptionalGetElement", [X], [X], {}, optional=frozenset({0}))
    assert model.graph.input[0].type.HasField("optional_type")
    assert not model.graph.output[0].type.HasField("optional_type")
    model, _ = _model("Relu", [X], [X], {})
    assert model.graph.input[0].type.HasField("tensor_type") and model.graph.output[0].type.HasField("tensor_type")


# --- c. optional-typed inputs in check_vjp_ort, check_vjp_onnxad and ort_forward ---

def test_optional_inputs_are_declared_optional():
    assert optional_positions("OptionalGetElement", [X], ["input"]) == {0}
    info = input_infos("OptionalGetElement", {"x0": X}, {0})
    assert info[0].type.optional_type.elem_type.tensor_type.elem_type == TensorProto.DOUBLE
    seq = input_infos("OptionalGetElement", {"x0": [X]}, {0})
    assert seq[0].type.optional_type.elem_type.HasField("sequence_type")
    assert ort_forward("OptionalHasElement", [X], keep_types=True, optional_inputs=["input"])[0].item() is True
    got = ort_forward("OptionalGetElement", [[X, X[:1]]], keep_types=True, optional_inputs=["input"])[0]
    assert [e.tolist() for e in got] == [[0.0, 1.0, 2.0], [0.0]]


def test_optional_inputs_that_the_call_or_the_schema_does_not_have_are_refused():
    with pytest.raises(ValueError, match="not given inputs"):
        optional_positions("OptionalGetElement", [X], ["x"])
    with pytest.raises(ValueError, match="takes no optional type"):
        optional_positions("Relu", [X], ["X"])
    with pytest.raises(ValueError, match="takes no optional type"):
        check_vjp_ort("Relu", lambda i, g, **a: [g[0] * (i[0] > 0)], [X], optional_inputs=["X"])


def test_engine_checks_run_with_an_optional_input():
    vjp = _vjp
    ort = check_vjp_ort("OptionalGetElement", vjp, [X], optional_inputs=["input"])
    assert not ort.compared and "no gradient builder for OptionalGetElement" in ort.notes
    ad = check_vjp_onnxad("OptionalGetElement", vjp, [X], optional_inputs=["input"])
    assert not ad.compared and "declared optional" in ad.summary
    plain = check_vjp_ort("OptionalGetElement", vjp, [X])  # default unchanged: a tensor input
    assert "declared optional" not in plain.summary


# --- d. ort_forward with keep_types and no attributes ---

def test_ort_forward_keeps_types_without_attributes():
    y = ort_forward("Relu", [np.array([-1.0, 2.0])], keep_types=True)[0]
    assert y.dtype == np.float64 and y.tolist() == [0.0, 2.0]
    y = ort_forward("Relu", [np.array([-1.0, 2.0])], None, keep_types=True)[0]
    assert y.tolist() == [0.0, 2.0]


# --- e. the element type of an empty sequence ---

def test_an_empty_sequence_without_an_element_type_is_refused_by_onnx_runtime():
    with pytest.raises(OrtRunError, match="Invalid tensor data type 0"):
        ort_forward("SequenceLength", [[]], keep_types=True)


def test_an_empty_sequence_takes_the_callers_element_type():
    assert ort_forward("SequenceLength", [[]], keep_types=True, elem_types={0: np.float32})[0].item() == 0
    assert ort_forward("SequenceLength", [[]], keep_types=True, elem_types={0: "double"})[0].item() == 0
    info = input_infos("SequenceLength", {"x0": []}, elem_types={0: "int64"})
    assert info[0].type.sequence_type.elem_type.tensor_type.elem_type == TensorProto.INT64


def test_an_empty_sequence_takes_the_schemas_element_type_where_it_is_fixed(monkeypatch):
    assert values.fixed_element_type(["seq(tensor(float))"]) == "float"
    assert values.fixed_element_type(["optional(seq(tensor(int64)))", "optional(tensor(int64))"]) == "int64"
    assert values.fixed_element_type(["seq(tensor(float))", "seq(tensor(double))"]) is None
    from proofkit import ortgrad
    from proofkit.schema import op_info
    real = op_info("SequenceLength")
    fixed = real.inputs[0].__class__(**{**real.inputs[0].__dict__, "types": ("seq(tensor(float))",)})
    monkeypatch.setattr(ortgrad, "op_info", lambda op: real.__class__(**{**real.__dict__, "inputs": (fixed,)}))
    info = ortgrad.input_infos("SequenceLength", {"x0": []})
    assert info[0].type.sequence_type.elem_type.tensor_type.elem_type == TensorProto.FLOAT


def test_value_info_element_type_must_agree_with_the_values_own():
    assert values.value_info("s", [], elem_type=np.float64).type.sequence_type.elem_type.tensor_type.elem_type == 11
    assert values.value_info("s", []).type.sequence_type.elem_type.tensor_type.elem_type == 0  # default unchanged
    with pytest.raises(ValueError, match="is not the value's element type"):
        values.value_info("s", [X], elem_type=np.float32)


# --- ONNX types in the tables ---

def test_an_onnx_type_attribute_is_shown_in_the_schemas_words():
    assert _attr_text({"type": T3}) == "{type=tensor(double)[3]}"
    seq = helper.make_optional_type_proto(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    assert values.type_text(seq) == "optional(seq(tensor(float)))"
    assert _attr_text({"axis": 1}) == "{axis=1}"


def test_stand_in_ops_keep_a_sequence_a_list_and_do_not_turn_none_into_an_array():
    finding = _departure()
    stand_in("Optional", _unwrapped, "unwrapped", departure=finding)
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.DOUBLE, None))

    def model(inputs, in_type, out_type, **attrs):
        node = helper.make_node("Optional", [n for n, _ in inputs], ["y"], **attrs)
        g = helper.make_graph([node], "g", [helper.make_value_info(n, t) for n, t in inputs],
                              [helper.make_value_info("y", helper.make_optional_type_proto(out_type))])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)

    seq = [np.zeros(2), np.ones(1)]  # elements of different shapes: np.asarray would refuse them
    sess = ReferenceEvaluator(model([("x", seq_t)], seq_t, seq_t), new_ops=onnxrun.stand_in_ops())
    (y,) = sess.run(None, {"x": seq})
    assert isinstance(y, list) and [e.tolist() for e in y] == [[0.0, 0.0], [1.0]]
    (y,) = ReferenceEvaluator(model([("x", T3)], T3, T3), new_ops=onnxrun.stand_in_ops()).run(None, {"x": X})
    assert isinstance(y, np.ndarray) and np.array_equal(y, X)
    # the empty optional stays None: onnx.reference's evaluator accepts no None result from an operator, so it is
    # refused loudly rather than passed on as an object array holding None (which OptionalHasElement reads as present)
    stand_in("Optional", _identity, "the identity", departure=finding)  # the evaluator hands `type` over wrapped
    with pytest.raises(TypeError, match="unexpected type"):
        ReferenceEvaluator(model([], None, T3, type=T3), new_ops=onnxrun.stand_in_ops()).run(None, {})
